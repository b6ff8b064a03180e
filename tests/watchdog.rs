//! Stream watchdogs: first-item, inactivity and total timers, touches,
//! suspensions, and slow consumers, all on a paused clock.

mod support;

use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::stream::FusedStream;
use futures_util::{stream, Stream, StreamExt};
use proptest::prelude::*;
use timebox::config::StreamConfig;
use timebox::watchdog::{StreamTimeout, TimeoutKind, Watchdog, WatchdogExt, WatchdogHandle};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

/// What the inner stream yields: its own results, as an upstream would.
type Item = Result<u32, &'static str>;

/// What the consumer saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Item(Item),
    Timeout(TimeoutKind),
    End,
}

use Seen::{End, Timeout};
use TimeoutKind::{FirstItem, Inactivity, Total};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ok(n: u32) -> Seen {
    Seen::Item(Ok(n))
}

/// A watched stream fed by the test body, read by a consumer task that
/// records when each outcome arrived, in virtual seconds since the start.
struct Script {
    start: Instant,
    tx: Option<mpsc::UnboundedSender<Item>>,
    handle: WatchdogHandle,
    consumer: JoinHandle<Vec<(Duration, Seen)>>,
}

impl Script {
    fn start(watchdog: Watchdog) -> Self {
        let start = Instant::now();
        let (tx, rx) = mpsc::unbounded_channel();
        let items = stream::unfold(rx, |mut rx| async move {
            let item = rx.recv().await?;
            Some((item, rx))
        });
        let watched = items.watchdog(watchdog);
        let handle = watched.handle();
        let consumer = tokio::spawn(record(start, watched));
        Self {
            start,
            tx: Some(tx),
            handle,
            consumer,
        }
    }

    /// Waits until `n` virtual seconds after the start.
    async fn at(&self, n: u64) {
        sleep_until(self.start + secs(n)).await;
    }

    fn send(&self, item: Item) {
        if let Some(tx) = &self.tx {
            // The consumer may have ended on a timeout already.
            let _ = tx.send(item);
        }
    }

    /// Ends the inner stream cleanly.
    fn close(&mut self) {
        self.tx = None;
    }

    /// Everything the consumer saw. Unless closed, the inner stream hangs
    /// meanwhile, so only a timer can end it.
    async fn seen(self) -> Vec<(Duration, Seen)> {
        let seen = self.consumer.await.unwrap();
        drop(self.tx);
        seen
    }
}

async fn record(
    start: Instant,
    watched: impl Stream<Item = Result<Item, StreamTimeout>>,
) -> Vec<(Duration, Seen)> {
    let mut watched = pin!(watched);
    let mut seen = Vec::new();
    loop {
        let outcome = match watched.next().await {
            Some(Ok(item)) => Seen::Item(item),
            Some(Err(timeout)) => Timeout(timeout.kind()),
            None => End,
        };
        let done = outcome == End;
        seen.push((start.elapsed(), outcome));
        if done {
            return seen;
        }
    }
}

fn inactivity_30s() -> Watchdog {
    Watchdog::new().inactivity(secs(30))
}

fn first_90s_inactivity_30s() -> Watchdog {
    Watchdog::new().first_item(secs(90)).inactivity(secs(30))
}

// Inactivity 30 s.

#[tokio::test(start_paused = true)]
async fn inactivity_fires_exactly_one_window_after_the_last_item() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    script.at(10).await;
    script.send(Ok(2));
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(10), ok(2)),
            (secs(40), Timeout(Inactivity)),
            (secs(40), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_touch_at_29s_moves_the_inactivity_deadline_to_59s() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    script.at(29).await;
    script.handle.touch();
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(59), Timeout(Inactivity)),
            (secs(59), End)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_suspension_of_3600s_never_fires_and_touches_during_it_do_nothing() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    let suspension = script.handle.suspend();
    for touch_at in [100, 1000, 3000] {
        script.at(touch_at).await;
        script.handle.touch();
        assert!(script.handle.is_suspended());
    }
    script.at(3600).await;
    assert!(!script.consumer.is_finished());
    drop(suspension);
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(3630), Timeout(Inactivity)),
            (secs(3630), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_suspension_that_ends_at_90s_starts_a_full_window_firing_at_120s() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    let suspension = script.handle.suspend();
    script.at(90).await;
    drop(suspension);
    assert!(!script.handle.is_suspended());
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(120), Timeout(Inactivity)),
            (secs(120), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn two_overlapping_suspensions_restart_the_timer_only_when_both_have_ended() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    let first = script.handle.suspend();
    script.at(20).await;
    let second = script.handle.suspend();
    script.at(50).await;
    drop(first);
    assert!(script.handle.is_suspended());
    script.at(80).await;
    drop(second);
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(110), Timeout(Inactivity)),
            (secs(110), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_zero_inactivity_window_never_fires_whatever_is_called() {
    let mut script = Script::start(Watchdog::new().inactivity(Duration::ZERO));
    script.send(Ok(1));
    script.at(1).await;
    script.handle.touch();
    let suspension = script.handle.suspend();
    script.at(2).await;
    drop(suspension);
    script.handle.touch();
    script.at(5000).await;
    script.send(Ok(2));
    script.at(10_000).await;
    script.close();
    assert_eq!(
        script.seen().await,
        [(secs(0), ok(1)), (secs(5000), ok(2)), (secs(10_000), End)]
    );
}

// First item 90 s and inactivity 30 s.

#[tokio::test(start_paused = true)]
async fn a_stream_that_never_yields_ends_with_first_item_at_90s() {
    let script = Script::start(first_90s_inactivity_30s());
    assert_eq!(
        script.seen().await,
        [(secs(90), Timeout(FirstItem)), (secs(90), End)]
    );
}

#[tokio::test(start_paused = true)]
async fn one_item_then_a_hang_ends_with_inactivity_30s_after_the_item() {
    let script = Script::start(first_90s_inactivity_30s());
    script.at(10).await;
    script.send(Ok(1));
    assert_eq!(
        script.seen().await,
        [
            (secs(10), ok(1)),
            (secs(40), Timeout(Inactivity)),
            (secs(40), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn items_every_20s_then_a_hang_end_30s_after_the_last_item() {
    let script = Script::start(first_90s_inactivity_30s());
    for (n, at) in (1..).zip([20, 40, 60, 80]) {
        script.at(at).await;
        script.send(Ok(n));
    }
    assert_eq!(
        script.seen().await,
        [
            (secs(20), ok(1)),
            (secs(40), ok(2)),
            (secs(60), ok(3)),
            (secs(80), ok(4)),
            (secs(110), Timeout(Inactivity)),
            (secs(110), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_from_0s_to_100s_completes_with_no_timeout() {
    let mut script = Script::start(first_90s_inactivity_30s());
    let tool_call = script.handle.suspend();
    script.at(100).await;
    drop(tool_call);
    script.send(Ok(1));
    script.close();
    assert_eq!(script.seen().await, [(secs(100), ok(1)), (secs(100), End)]);
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_after_the_first_item_completes_with_no_timeout() {
    let mut script = Script::start(first_90s_inactivity_30s());
    script.send(Ok(1));
    let tool_call = script.handle.suspend();
    script.at(100).await;
    drop(tool_call);
    script.send(Ok(2));
    script.close();
    assert_eq!(
        script.seen().await,
        [(secs(0), ok(1)), (secs(100), ok(2)), (secs(100), End)]
    );
}

#[tokio::test(start_paused = true)]
async fn silence_after_a_tool_result_at_100s_ends_with_inactivity_at_130s() {
    let script = Script::start(first_90s_inactivity_30s());
    script.send(Ok(1));
    let tool_call = script.handle.suspend();
    script.at(100).await;
    drop(tool_call);
    script.send(Ok(2));
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(100), ok(2)),
            (secs(130), Timeout(Inactivity)),
            (secs(130), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_suspension_before_the_first_item_restarts_the_first_item_window_when_it_ends() {
    let script = Script::start(first_90s_inactivity_30s());
    let tool_call = script.handle.suspend();
    script.at(100).await;
    drop(tool_call);
    assert_eq!(
        script.seen().await,
        [(secs(190), Timeout(FirstItem)), (secs(190), End)]
    );
}

#[tokio::test(start_paused = true)]
async fn side_channel_touches_at_20_40_60s_keep_the_stream_alive_until_90s() {
    let script = Script::start(first_90s_inactivity_30s());
    script.send(Ok(1));
    for at in [20, 40, 60] {
        script.at(at).await;
        script.handle.touch();
    }
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(90), Timeout(Inactivity)),
            (secs(90), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_touch_before_the_first_item_changes_nothing() {
    let script = Script::start(first_90s_inactivity_30s());
    script.at(10).await;
    script.handle.touch();
    script.at(80).await;
    script.handle.touch();
    assert_eq!(
        script.seen().await,
        [(secs(90), Timeout(FirstItem)), (secs(90), End)]
    );
}

#[tokio::test(start_paused = true)]
async fn heartbeats_every_5s_do_not_keep_a_silent_stream_alive() {
    let script = Script::start(first_90s_inactivity_30s());
    script.send(Ok(1));
    let beats = Arc::new(AtomicUsize::new(0));
    // A heartbeat writer holds the handle, as an SSE body would, and never
    // touches it: a keep-alive is not progress.
    let heartbeat = tokio::spawn({
        let beats = Arc::clone(&beats);
        let handle = script.handle.clone();
        async move {
            let _handle = handle;
            let mut every_5s = tokio::time::interval(secs(5));
            loop {
                every_5s.tick().await;
                beats.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let seen = script.seen().await;
    heartbeat.abort();
    assert_eq!(
        seen,
        [
            (secs(0), ok(1)),
            (secs(30), Timeout(Inactivity)),
            (secs(30), End),
        ]
    );
    // Beats at 0, 5, .., 25 at least: the heartbeat ran all along.
    assert!(beats.load(Ordering::Relaxed) >= 6);
}

#[tokio::test(start_paused = true)]
async fn an_error_item_as_first_outcome_is_yielded_and_ends_the_first_item_wait() {
    let mut script = Script::start(Watchdog::new().first_item(secs(90)));
    script.at(1).await;
    script.send(Err("upstream returned 500"));
    script.at(120).await;
    script.send(Ok(2));
    script.at(150).await;
    script.close();
    assert_eq!(
        script.seen().await,
        [
            (secs(1), Seen::Item(Err("upstream returned 500"))),
            (secs(120), ok(2)),
            (secs(150), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn total_900s_ends_a_stream_with_steady_items_every_10s_at_900s() {
    let script = Script::start(first_90s_inactivity_30s().total(secs(900)));
    for (n, at) in (0..).zip((0..=1000).step_by(10)) {
        script.at(at).await;
        script.send(Ok(n));
    }
    let seen = script.seen().await;
    // Items at 0, 10, .., 890; the one due at 900 loses to the timer.
    assert_eq!(seen.len(), 90 + 2);
    assert_eq!(seen[89], (secs(890), ok(89)));
    assert_eq!(seen[90..], [(secs(900), Timeout(Total)), (secs(900), End)]);
}

#[tokio::test(start_paused = true)]
async fn an_item_and_the_inactivity_timer_due_at_the_same_instant_the_timer_wins() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    script.at(30).await;
    script.send(Ok(2));
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(30), Timeout(Inactivity)),
            (secs(30), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_item_and_the_first_item_timer_due_at_the_same_instant_the_timer_wins() {
    let script = Script::start(first_90s_inactivity_30s());
    script.at(90).await;
    script.send(Ok(1));
    assert_eq!(
        script.seen().await,
        [(secs(90), Timeout(FirstItem)), (secs(90), End)]
    );
}

#[tokio::test(start_paused = true)]
async fn total_is_never_suspended() {
    let script = Script::start(inactivity_30s().total(secs(100)));
    script.send(Ok(1));
    let _tool_call = script.handle.suspend();
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(100), Timeout(Total)),
            (secs(100), End),
        ]
    );
}

// Consumers and other tasks.

#[tokio::test(start_paused = true)]
async fn a_consumer_that_polls_late_gets_the_timeout_whose_instant_has_passed() {
    let start = Instant::now();
    let mut watched = stream::iter([1, 2, 3]).watchdog(inactivity_30s());
    assert_eq!(watched.next().await, Some(Ok(1)));
    sleep_until(start + secs(100)).await;
    // Item 2 is ready, but the clock passed the deadline at 30 s.
    let err = watched.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), Inactivity);
    assert_eq!(watched.next().await, None);
    assert_eq!(start.elapsed(), secs(100));
}

/// Drives a watched stream of one item every 10 s into a full
/// `mpsc::channel(1)` that nobody reads, racing each blocked send against
/// `timed_out`. Returns the timeout and when the producer saw it.
async fn produce_into_an_unread_channel(watchdog: Watchdog) -> (TimeoutKind, Duration) {
    let start = Instant::now();
    let items = stream::iter(1..).then(|n| async move {
        tokio::time::sleep(secs(10)).await;
        n
    });
    let (tx, rx) = mpsc::channel(1);
    let producer = tokio::spawn(async move {
        let mut watched = pin!(items.watchdog(watchdog));
        while let Some(item) = watched.next().await {
            let Ok(n) = item else { break };
            tokio::select! {
                biased;
                timeout = watched.as_mut().timed_out() => {
                    // The stream latched the same timeout and ends with it.
                    assert_eq!(watched.next().await, Some(Err(timeout)));
                    assert_eq!(watched.next().await, None);
                    return Some((timeout.kind(), start.elapsed()));
                }
                sent = tx.send(n) => if sent.is_err() { break },
            }
        }
        None
    });
    let seen = producer.await.unwrap().expect("the producer saw a timeout");
    // The reader never read: only the first item ever made it in.
    assert_eq!(rx.len(), 1);
    seen
}

#[tokio::test(start_paused = true)]
async fn a_consumer_that_stops_reading_does_not_stop_the_total_timer() {
    let seen = produce_into_an_unread_channel(Watchdog::new().total(secs(60))).await;
    assert_eq!(seen, (Total, secs(60)));
}

#[tokio::test(start_paused = true)]
async fn a_consumer_that_stops_reading_does_not_stop_the_inactivity_timer() {
    // Items were taken at 10 s (sent) and 20 s (send blocked): 30 s later.
    let seen = produce_into_an_unread_channel(inactivity_30s()).await;
    assert_eq!(seen, (Inactivity, secs(50)));
}

#[tokio::test(start_paused = true)]
async fn touches_from_another_task_re_arm_the_timer() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    let handle = script.handle.clone();
    let start = script.start;
    let toucher = tokio::spawn(async move {
        for at in [20, 40] {
            sleep_until(start + secs(at)).await;
            handle.touch();
        }
    });
    let seen = script.seen().await;
    toucher.await.unwrap();
    assert_eq!(
        seen,
        [
            (secs(0), ok(1)),
            (secs(70), Timeout(Inactivity)),
            (secs(70), End),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_suspension_from_another_task_holds_the_timer_until_that_task_drops_it() {
    let script = Script::start(inactivity_30s());
    script.send(Ok(1));
    let suspension = script.handle.suspend();
    let start = script.start;
    let tool = tokio::spawn(async move {
        sleep_until(start + secs(45)).await;
        drop(suspension);
    });
    let seen = script.seen().await;
    tool.await.unwrap();
    assert_eq!(
        seen,
        [
            (secs(0), ok(1)),
            (secs(75), Timeout(Inactivity)),
            (secs(75), End),
        ]
    );
}

#[test]
fn handles_and_suspensions_can_move_between_threads() {
    fn send_sync<T: Send + Sync + Clone>() {}
    fn send<T: Send + Sync>() {}
    send_sync::<WatchdogHandle>();
    send::<timebox::watchdog::Suspension>();
}

// Configuration and errors.

#[tokio::test(start_paused = true)]
async fn the_default_stream_config_has_no_inactivity_timer_and_ends_at_900s() {
    let watchdog = Watchdog::from_config(&StreamConfig::default());
    assert_eq!(watchdog.first_item_timeout(), Some(secs(90)));
    assert_eq!(watchdog.inactivity_timeout(), None);
    assert_eq!(watchdog.total_timeout(), Some(secs(900)));

    let script = Script::start(watchdog);
    script.send(Ok(1));
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(900), Timeout(Total)),
            (secs(900), End),
        ]
    );
}

#[test]
fn zero_in_the_stream_config_turns_a_timer_off() {
    let config = StreamConfig {
        first_chunk_timeout_secs: 0,
        stream_timeout_secs: 0,
        stream_inactivity_timeout_secs: 30,
        ..StreamConfig::default()
    };
    assert_eq!(
        Watchdog::from_config(&config),
        Watchdog::new().inactivity(secs(30))
    );
}

#[tokio::test(start_paused = true)]
async fn timeouts_name_their_cause_in_lowercase() {
    async fn timeout_of(watchdog: Watchdog, items: Vec<u32>) -> StreamTimeout {
        let watched = stream::iter(items)
            .chain(stream::pending())
            .watchdog(watchdog);
        let mut watched = pin!(watched);
        loop {
            if let Err(timeout) = watched.next().await.unwrap() {
                return timeout;
            }
        }
    }

    let first = timeout_of(Watchdog::new().first_item(secs(90)), vec![]).await;
    let idle = timeout_of(inactivity_30s(), vec![1]).await;
    let total = timeout_of(Watchdog::new().total(secs(900)), vec![1]).await;
    assert_eq!(
        (first.kind(), idle.kind(), total.kind()),
        (FirstItem, Inactivity, Total)
    );
    assert_eq!(
        first.to_string(),
        "stream timed out: no first item within 90s"
    );
    assert_eq!(idle.to_string(), "stream timed out: no activity for 30s");
    assert_eq!(
        total.to_string(),
        "stream timed out: still running after 900s"
    );
    assert_eq!(idle.limit(), secs(30));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(total);
    assert_eq!(boxed.to_string(), total.to_string());
}

// W1–W4 against a reference model: any sequence of items, touches,
// suspensions and clock steps, checked after every step.

/// What a test step does before it looks at the stream.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// An item becomes ready in the inner stream (yielded at the next
    /// `Next` look).
    Send,
    Touch,
    /// `handle.suspend()`, the guard kept.
    Suspend,
    /// Drops one of the kept guards (the one at this index, modulo how many
    /// there are); nothing when none is kept.
    Resume(usize),
    /// Moves the paused clock on by this many milliseconds.
    Advance(u64),
}

/// How a step looks at the stream afterwards.
#[derive(Debug, Clone, Copy)]
enum Look {
    /// `poll_next`: the consumer reads.
    Next,
    /// `poll_timed_out`: a producer whose send is blocked asks only whether
    /// a timer fired.
    TimedOut,
}

/// The watchdog's rules, written out plainly, in milliseconds since the
/// start.
#[derive(Debug)]
struct Model {
    first_item: Option<u64>,
    inactivity: Option<u64>,
    total: Option<u64>,
    now: u64,
    /// Where the silence window (first item, then inactivity) runs from.
    since: u64,
    seen_item: bool,
    suspensions: usize,
    queued: std::collections::VecDeque<u32>,
}

impl Model {
    fn new(first_item: Option<u64>, inactivity: Option<u64>, total: Option<u64>) -> Self {
        // W1: zero means off.
        let on = |window: Option<u64>| window.filter(|&ms| ms > 0);
        Self {
            first_item: on(first_item),
            inactivity: on(inactivity),
            total: on(total),
            now: 0,
            since: 0,
            seen_item: false,
            suspensions: 0,
            queued: std::collections::VecDeque::new(),
        }
    }

    /// The timer that has fired by now, with its window.
    fn timed_out(&self) -> Option<(TimeoutKind, u64)> {
        // W3: a suspension holds the silence timer, never the total one.
        let silence = if self.suspensions > 0 {
            None
        } else if self.seen_item {
            self.inactivity
                .map(|window| (self.since + window, Inactivity, window))
        } else {
            // W2: the first-item window until the first item.
            self.first_item
                .map(|window| (self.since + window, FirstItem, window))
        };
        let total = self.total.map(|limit| (limit, Total, limit));
        // On a tie the silence timer is named: a stall is the more telling
        // cause.
        let earliest = match (silence, total) {
            (Some(silence), Some(total)) if total.0 < silence.0 => Some(total),
            (Some(silence), _) => Some(silence),
            (None, total) => total,
        };
        earliest
            .filter(|&(deadline, _, _)| self.now >= deadline)
            .map(|(_, kind, window)| (kind, window))
    }

    fn item(&mut self) {
        self.since = self.now;
        self.seen_item = true;
    }

    fn touch(&mut self) {
        // W3: touches do nothing while suspended, nor before the first item.
        if self.suspensions == 0 && self.seen_item {
            self.since = self.now;
        }
    }

    fn resume(&mut self) {
        self.suspensions -= 1;
        if self.suspensions == 0 {
            self.since = self.now;
        }
    }
}

fn window() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![1 => Just(None), 4 => (0u64..=60).prop_map(Some)]
}

fn step() -> impl Strategy<Value = (Op, Look)> {
    let op = prop_oneof![
        3 => Just(Op::Send),
        2 => Just(Op::Touch),
        1 => Just(Op::Suspend),
        1 => any::<usize>().prop_map(Op::Resume),
        5 => (0u64..=25).prop_map(Op::Advance),
    ];
    let look = prop_oneof![3 => Just(Look::Next), 1 => Just(Look::TimedOut)];
    (op, look)
}

/// Runs `steps` against a real watched stream and the model; the error says
/// at which step they parted.
fn run_against_model(
    (first_item, inactivity, total): (Option<u64>, Option<u64>, Option<u64>),
    steps: &[(Op, Look)],
) -> Result<(), TestCaseError> {
    let ms = Duration::from_millis;
    let runtime = support::paused_runtime();
    runtime.block_on(async {
        let watchdog = Watchdog::new()
            .first_item(first_item.map(ms))
            .inactivity(inactivity.map(ms))
            .total(total.map(ms));
        let (tx, mut rx) = mpsc::unbounded_channel::<u32>();
        let items = stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut watched = items.watchdog(watchdog);
        let handle = watched.handle();
        let mut model = Model::new(first_item, inactivity, total);
        let mut kept = Vec::new();
        let mut next_item = 0;
        let mut cx = Context::from_waker(Waker::noop());

        for (i, &(op, look)) in steps.iter().enumerate() {
            match op {
                Op::Send => {
                    tx.send(next_item).unwrap();
                    model.queued.push_back(next_item);
                    next_item += 1;
                }
                Op::Touch => {
                    handle.touch();
                    model.touch();
                }
                Op::Suspend => {
                    kept.push(handle.suspend());
                    model.suspensions += 1;
                }
                Op::Resume(index) => {
                    if !kept.is_empty() {
                        drop(kept.remove(index % kept.len()));
                        model.resume();
                    }
                }
                Op::Advance(by) => {
                    tokio::time::advance(ms(by)).await;
                    model.now += by;
                }
            }

            let expected = model.timed_out();
            let timeout = match look {
                Look::TimedOut => match Pin::new(&mut watched).poll_timed_out(&mut cx) {
                    Poll::Ready(timeout) => Some(timeout),
                    Poll::Pending => None,
                },
                Look::Next => match Pin::new(&mut watched).poll_next(&mut cx) {
                    Poll::Ready(Some(Err(timeout))) => Some(timeout),
                    Poll::Ready(Some(Ok(item))) => {
                        prop_assert_eq!(
                            Some(item),
                            model.queued.pop_front(),
                            "step {} at {} ms: {:?}",
                            i,
                            model.now,
                            model
                        );
                        model.item();
                        None
                    }
                    Poll::Ready(None) => {
                        return Err(TestCaseError::fail(format!(
                            "step {i}: the stream ended without a timeout"
                        )))
                    }
                    Poll::Pending => {
                        prop_assert!(
                            model.queued.is_empty(),
                            "step {}: an item was ready but not yielded",
                            i
                        );
                        None
                    }
                },
            };
            prop_assert_eq!(
                timeout.map(|t| (t.kind(), t.limit())),
                expected.map(|(kind, window)| (kind, ms(window))),
                "step {} ({:?}, {:?}) at {} ms: {:?}",
                i,
                op,
                look,
                model.now,
                model
            );
            if let Some(timeout) = timeout {
                // The timeout is latched: a reader that only asked
                // `timed_out` still gets it from the stream, then the end.
                if let Look::TimedOut = look {
                    let next = Pin::new(&mut watched).poll_next(&mut cx);
                    prop_assert_eq!(next, Poll::Ready(Some(Err(timeout))));
                }
                let after = Pin::new(&mut watched).poll_next(&mut cx);
                prop_assert_eq!(
                    after,
                    Poll::Ready(None),
                    "the stream ends after its timeout"
                );
                prop_assert!(watched.is_terminated());
                return Ok(());
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_watched_stream_times_out_exactly_when_and_as_the_model_says(
        windows in (window(), window(), window()),
        steps in prop::collection::vec(step(), 1..60),
    ) {
        run_against_model(windows, &steps)?;
    }
}
