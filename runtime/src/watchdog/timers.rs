//! The clock side of a watched stream: its deadlines, its one `Sleep` and the
//! latch of the timeout that fired. Nothing here depends on the stream type,
//! so it is compiled once rather than once per stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{sleep_until, Instant, Sleep};

use super::handle::Activity;
use super::{StreamTimeout, TimeoutKind, Watchdog};

/// What a poll of the stream may do, decided before the stream is polled.
pub(super) enum Gate {
    /// The stream has ended (cleanly or after its timeout).
    Ended,
    /// A timer has fired: yield this and end.
    Fire(StreamTimeout),
    /// No timer has fired: the stream may be polled.
    Open,
}

pub(super) struct Timers {
    watchdog: Watchdog,
    started: Instant,
    activity: Arc<Activity>,
    /// One wake-up, reset to the earliest armed deadline. Boxed so that
    /// `Watched<S>` is `Unpin` whenever `S` is.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The timeout that fired, kept so every later look reports the same one.
    fired: Option<StreamTimeout>,
    ended: bool,
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("watchdog", &self.watchdog)
            .field("started", &self.started)
            .field("fired", &self.fired)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Timers {
    pub(super) fn new(watchdog: Watchdog) -> Self {
        let started = Instant::now();
        Self {
            watchdog,
            started,
            activity: Arc::new(Activity::new(
                started,
                watchdog.first_item_timeout(),
                watchdog.inactivity_timeout(),
            )),
            sleep: None,
            fired: None,
            ended: false,
        }
    }

    pub(super) fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    pub(super) fn is_ended(&self) -> bool {
        self.ended
    }

    /// Checks the clock before the stream is polled: at or past a deadline
    /// the timer wins, even over an item that is ready now.
    pub(super) fn gate(&mut self) -> Gate {
        if self.ended {
            return Gate::Ended;
        }
        match self.expired() {
            Some(timeout) => {
                self.end();
                Gate::Fire(timeout)
            }
            None => Gate::Open,
        }
    }

    /// The stream yielded an item: the first-item wait is over and the
    /// inactivity window restarts.
    pub(super) fn on_item(&mut self) {
        self.activity.item(Instant::now());
    }

    /// When the watch began: the start of the first-item and total timers.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // read by SSE streams only
    pub(super) const fn started(&self) -> Instant {
        self.started
    }

    /// When what a stream sends after its clean end must have gone, as its
    /// items had to: within one inactivity window from now, by the first
    /// item's bound if none came, and not past the total bound; `None` when
    /// the watchdog has none of them.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // read by SSE streams only
    pub(super) fn after_end_deadline(&self) -> Option<Instant> {
        let window = self
            .watchdog
            .inactivity_timeout()
            .and_then(|window| Instant::now().checked_add(window));
        let total = self
            .watchdog
            .total_timeout()
            .and_then(|limit| self.started.checked_add(limit));
        // Before the first item, its window, unless it is suspended.
        let first_item = self
            .activity
            .silence()
            .filter(|&(_, _, kind)| kind == TimeoutKind::FirstItem)
            .and_then(|(since, window, _)| since.checked_add(window));
        window.into_iter().chain(total).chain(first_item).min()
    }

    /// The stream ended, or yielded its timeout: the timers stop.
    pub(super) fn end(&mut self) {
        self.ended = true;
        self.sleep = None;
    }

    /// Ready with the timeout once a timer has fired; else arms the wake-up
    /// for the earliest deadline. Does not end the stream: the timeout is
    /// latched and yielded by the next poll of the stream.
    pub(super) fn poll_timed_out(&mut self, cx: &mut Context<'_>) -> Poll<StreamTimeout> {
        if let Some(timeout) = self.expired() {
            return Poll::Ready(timeout);
        }
        if self.ended {
            return Poll::Pending;
        }
        if self.watchdog.first_item_timeout().is_some()
            || self.watchdog.inactivity_timeout().is_some()
        {
            self.activity.register(cx.waker());
        }
        let Some((deadline, timeout)) = self.next_deadline() else {
            // Nothing armed (say, all suspended): no wake-up to leave behind.
            self.sleep = None;
            return Poll::Pending;
        };
        let sleep = match &mut self.sleep {
            Some(sleep) => {
                if sleep.deadline() != deadline {
                    sleep.as_mut().reset(deadline);
                }
                sleep
            }
            None => self.sleep.insert(Box::pin(sleep_until(deadline))),
        };
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        // The wake-up for this very deadline has fired: the clock is there.
        self.fired = Some(timeout);
        Poll::Ready(timeout)
    }

    /// The latched timeout, or the one whose deadline the clock has reached.
    fn expired(&mut self) -> Option<StreamTimeout> {
        if self.fired.is_none() && !self.ended {
            self.fired = self
                .next_deadline()
                .filter(|(deadline, _)| Instant::now() >= *deadline)
                .map(|(_, timeout)| timeout);
        }
        self.fired
    }

    /// The earliest armed deadline and the timeout it would give. On a tie
    /// the silence timer (first item or inactivity) is named rather than
    /// total: a stall is the more telling cause.
    fn next_deadline(&self) -> Option<(Instant, StreamTimeout)> {
        let silence = self
            .activity
            .silence()
            .and_then(|(since, window, kind)| arm(since, window, kind));
        let total = self
            .watchdog
            .total_timeout()
            .and_then(|limit| arm(self.started, limit, TimeoutKind::Total));
        match (silence, total) {
            (Some(silence), Some(total)) if total.0 < silence.0 => Some(total),
            (Some(silence), _) => Some(silence),
            (None, total) => total,
        }
    }
}

/// A deadline `window` after `from`; none when that is past the end of the
/// clock, which is as good as never.
fn arm(from: Instant, window: Duration, kind: TimeoutKind) -> Option<(Instant, StreamTimeout)> {
    let deadline = from.checked_add(window)?;
    Some((deadline, StreamTimeout::new(kind, window)))
}
