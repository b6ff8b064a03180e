//! Consumers and other tasks.

use super::*;

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
