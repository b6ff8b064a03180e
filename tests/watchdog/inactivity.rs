//! Inactivity 30 s.

use super::*;

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

/// W4: a touch, or a suspension, that comes after the window ran out but
/// before anything polled the stream to see it (its consumer busy, or woken
/// and not yet run) does not take the timeout back.
#[tokio::test(start_paused = true)]
async fn a_touch_or_a_suspension_after_the_window_ran_out_unseen_does_not_undo_it() {
    for suspend in [false, true] {
        let mut watched = stream::iter([1])
            .chain(stream::pending())
            .watchdog(inactivity_30s());
        let handle = watched.handle();
        assert_eq!(watched.next().await.map(|item| item.is_ok()), Some(true));
        tokio::time::advance(secs(31)).await;
        let _suspension = if suspend {
            Some(handle.suspend())
        } else {
            handle.touch();
            None
        };
        assert_eq!(
            next_timeout(&mut watched).await,
            (Inactivity, Duration::ZERO),
            "suspend: {suspend}"
        );
    }
}
