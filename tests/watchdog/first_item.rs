//! First item 90 s and inactivity 30 s.

use super::*;

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

/// W4, before the first item: a suspension that comes after the first-item
/// window ran out, before anything polled the stream to see it, does not
/// take the timeout back.
#[tokio::test(start_paused = true)]
async fn a_suspension_after_the_first_item_window_ran_out_unseen_does_not_undo_it() {
    let mut watched = stream::pending::<u32>().watchdog(first_90s_inactivity_30s());
    let handle = watched.handle();
    tokio::time::advance(secs(91)).await;
    let _suspension = handle.suspend();
    assert_eq!(
        next_timeout(&mut watched).await,
        (FirstItem, Duration::ZERO)
    );
}
