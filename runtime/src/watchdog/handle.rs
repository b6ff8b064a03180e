//! [`WatchdogHandle`] and [`Suspension`]: progress and pauses reported from
//! outside the stream.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Duration;

use tokio::time::Instant;

use super::TimeoutKind;

/// A handle to a [`Watched`](super::Watched) stream's silence timers, for
/// progress the stream itself does not show.
///
/// Get one with [`Watched::handle`](super::Watched::handle). Clones share
/// the stream's timer; the handle is `Send + Sync`, so tool runners and other
/// tasks can hold it. Once the stream is gone, calls do nothing.
///
/// - [`touch`](Self::touch) is side-channel progress (a tool event, a
///   sub-request finishing): it re-arms the inactivity timer like an item.
/// - [`suspend`](Self::suspend) holds the inactivity timer (before the first
///   item: the first-item timer) off while known long work runs, such as a
///   tool call.
///
/// Neither affects the total timer. Keep-alive traffic such as
/// SSE heartbeats must **not** call `touch`: a heartbeat proves the
/// connection is open, not that the stream makes progress, and touching on
/// every heartbeat would keep a stalled stream alive forever.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use futures_util::{stream, StreamExt};
/// use timebox::watchdog::{TimeoutKind, Watchdog, WatchdogExt};
///
/// #[tokio::main]
/// # async fn _hidden() {}
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     // The doctest runs this on a paused clock (`start_paused`), where the
///     // times below are exact.
///     let start = tokio::time::Instant::now();
///     let watchdog = Watchdog::new().inactivity(Duration::from_secs(30));
///     let mut watched = stream::iter(["tool call"]).chain(stream::pending()).watchdog(watchdog);
///     let handle = watched.handle();
///
///     assert_eq!(watched.next().await.unwrap(), Ok("tool call"));
///     let suspension = handle.suspend();
///     tokio::spawn(async move {
///         // The tool runs for 100 s; no inactivity timeout meanwhile.
///         tokio::time::sleep(Duration::from_secs(100)).await;
///         drop(suspension);
///     });
///
///     let err = watched.next().await.unwrap().unwrap_err();
///     assert_eq!(err.kind(), TimeoutKind::Inactivity);
///     // A full window after the suspension ended.
///     assert_eq!(start.elapsed(), Duration::from_secs(130));
/// }
/// ```
#[derive(Debug, Clone)]
pub struct WatchdogHandle {
    activity: Arc<Activity>,
}

impl WatchdogHandle {
    pub(super) fn new(activity: Arc<Activity>) -> Self {
        Self { activity }
    }

    /// Reports progress: the inactivity window restarts from now, as if an
    /// item had arrived.
    ///
    /// Does nothing while a [`Suspension`] is alive, and nothing before the
    /// stream's first item: the inactivity timer is not armed yet, and only
    /// an outcome of the stream itself ends the first-item wait. Nor does it
    /// take back a window that has already run out: the stream yields that
    /// timeout at its next poll, however late.
    pub fn touch(&self) {
        self.activity.touch(Instant::now());
    }

    /// Holds the silence timers off until the returned guard is dropped.
    ///
    /// Suspensions are counted: while any is alive the inactivity timer
    /// cannot fire and touches do nothing, so parallel tool calls each take
    /// their own. When the last one is dropped a full inactivity window
    /// starts. A suspension taken before the first item (a tool call made
    /// before any output) holds the first-item timer the same way, and a
    /// full first-item window starts when it ends. The total timer is never
    /// suspended, and a suspension taken after the window has run out
    /// holds nothing: the stream yields that timeout at its next poll.
    #[must_use = "the suspension ends as soon as the guard is dropped"]
    pub fn suspend(&self) -> Suspension {
        self.activity.suspend(Instant::now());
        Suspension {
            activity: Arc::clone(&self.activity),
        }
    }

    /// Whether a [`Suspension`] is alive.
    #[must_use]
    pub fn is_suspended(&self) -> bool {
        self.activity.lock().suspensions > 0
    }
}

/// Holds a watched stream's inactivity (or, before the first item,
/// first-item) timer off while alive; made by [`WatchdogHandle::suspend`].
///
/// Dropping the last live suspension starts a full window.
#[derive(Debug)]
#[must_use = "the suspension ends as soon as the guard is dropped"]
pub struct Suspension {
    activity: Arc<Activity>,
}

impl Drop for Suspension {
    fn drop(&mut self) {
        self.activity.resume(Instant::now());
    }
}

/// The silence timers' state, shared by a [`Watched`](super::Watched) stream
/// and its handles.
#[derive(Debug)]
pub(super) struct Activity {
    state: Mutex<State>,
    /// The silence windows: until the first item, then after it.
    first_item: Option<Duration>,
    inactivity: Option<Duration>,
}

#[derive(Debug)]
struct State {
    /// Where the current silence window runs from: the start, then the last
    /// item, touch or end of a suspension.
    since: Instant,
    /// Until the first item the silence window is the first-item window,
    /// then the inactivity window.
    seen_item: bool,
    suspensions: usize,
    /// The task that last polled the stream's timers, woken when the last
    /// suspension ends: the stream has no silence timer armed until then.
    waker: Option<Waker>,
    /// Set when a touch or a suspension came after the silence window had
    /// run out but before the stream was polled to see it: the timeout
    /// stands (W4: the timers do not wait for the consumer), and nothing
    /// moves or holds the window any more.
    lapsed: bool,
}

impl Activity {
    /// The state of a stream started at `start`, with the given silence
    /// windows (`None`: off).
    pub(super) fn new(
        start: Instant,
        first_item: Option<Duration>,
        inactivity: Option<Duration>,
    ) -> Self {
        Self {
            state: Mutex::new(State {
                since: start,
                seen_item: false,
                suspensions: 0,
                waker: None,
                lapsed: false,
            }),
            first_item,
            inactivity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held; recover rather than spread a
        // poison that cannot mean a broken state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An item of the stream arrived at `now`.
    pub(super) fn item(&self, now: Instant) {
        let mut state = self.lock();
        state.since = now;
        state.seen_item = true;
        // The stream was polled before its window ran out (a touch may
        // have found it run out while that poll ran): a new window starts.
        state.lapsed = false;
    }

    fn touch(&self, now: Instant) {
        let mut state = self.lock();
        if state.suspensions == 0 && state.seen_item && !self.lapse(&mut state, now) {
            // No wake-up: a touch only moves the deadline later, and the
            // stream's timer, still set for the earlier instant, wakes it
            // then to re-arm (the lazy re-arm of tokio's own timeouts).
            state.since = now;
        }
    }

    fn suspend(&self, now: Instant) {
        let mut state = self.lock();
        if state.suspensions == 0 {
            self.lapse(&mut state, now);
        }
        state.suspensions += 1;
    }

    fn resume(&self, now: Instant) {
        let waker = {
            let mut state = self.lock();
            state.suspensions -= 1;
            if state.suspensions > 0 {
                return;
            }
            if !state.lapsed {
                state.since = now;
            }
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The silence window that runs in `state`: where it runs from, how
    /// long it is and the timeout it gives (W2: the first-item window until
    /// the first item, then the inactivity window); `None` when it is off.
    fn window(&self, state: &State) -> Option<(Instant, Duration, TimeoutKind)> {
        let (window, kind) = if state.seen_item {
            (self.inactivity?, TimeoutKind::Inactivity)
        } else {
            (self.first_item?, TimeoutKind::FirstItem)
        };
        Some((state.since, window, kind))
    }

    /// Whether the silence window that runs now had run out at `now`
    /// (latched: once it has, it stays so). Called unsuspended only.
    fn lapse(&self, state: &mut State, now: Instant) -> bool {
        if !state.lapsed {
            state.lapsed = self
                .window(state)
                .and_then(|(since, window, _)| since.checked_add(window))
                .is_some_and(|deadline| now >= deadline);
        }
        state.lapsed
    }

    /// The silence window armed now (see [`window`](Self::window)); `None`
    /// while suspended, unless the window ran out before the suspension
    /// began.
    pub(super) fn silence(&self) -> Option<(Instant, Duration, TimeoutKind)> {
        let state = self.lock();
        if state.suspensions > 0 && !state.lapsed {
            return None;
        }
        self.window(&state)
    }

    /// Wakes `waker` when the last suspension ends.
    pub(super) fn register(&self, waker: &Waker) {
        let mut state = self.lock();
        if !state
            .waker
            .as_ref()
            .is_some_and(|registered| registered.will_wake(waker))
        {
            state.waker = Some(waker.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Activity;

    /// W3 after W4's latch: an item the stream yields starts a new window
    /// even when a touch during the poll that made it (on another thread)
    /// found the old one run out, so a suspension afterwards holds the
    /// timer as it should. The clock readings are given, as the race has
    /// them: the gate passed before the deadline, the touch came after it.
    #[test]
    fn an_item_after_a_touch_that_found_the_window_run_out_starts_a_new_one() {
        let window = Duration::from_secs(30);
        let start = Instant::now();
        let activity = Activity::new(start, None, Some(window));
        activity.item(start);
        let late = start + window + Duration::from_secs(1);
        activity.touch(late);
        activity.item(late);
        activity.suspend(late);
        assert_eq!(activity.silence(), None, "the suspension holds the timer");
    }
}
