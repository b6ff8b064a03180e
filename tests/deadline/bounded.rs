//! D5: `bounded` reads the deadline at its first poll and is poll-gated: at or
//! past the deadline it returns `DeadlineExceeded` without polling again.

use super::*;

#[tokio::test(start_paused = true)]
async fn bounded_work_is_stopped_exactly_at_the_deadline() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(bounded(sleep(Duration::from_secs(10))))
        .await;
    assert!(result.is_err(), "got {result:?}");
    assert_eq!(start.elapsed(), ONE);
}

#[tokio::test(start_paused = true)]
async fn bounded_work_without_a_deadline_runs_to_the_end() {
    let start = Instant::now();
    let result = bounded(sleep(Duration::from_secs(10))).await;
    assert_eq!(result, Ok(()));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn work_woken_at_the_deadline_never_runs() {
    let deadline = Deadline::after(ONE);
    let ran = Cell::new(false);
    let result = deadline
        .scope(bounded(async {
            sleep_until(deadline.instant()).await;
            ran.set(true);
        }))
        .await;
    assert!(result.is_err(), "got {result:?}");
    assert!(!ran.get(), "work woken at the deadline ran");
    assert_eq!(Instant::now(), deadline.instant());
}

#[tokio::test(start_paused = true)]
async fn an_expired_deadline_never_polls_the_work() {
    let polls = Cell::new(0_u32);
    let counted = || {
        poll_fn(|_| {
            polls.set(polls.get() + 1);
            Poll::Ready(7)
        })
    };

    let at_now = Deadline::at(Instant::now()).scope(bounded(counted())).await;
    assert!(at_now.is_err(), "got {at_now:?}");

    let passed = Deadline::after(ONE);
    advance(Duration::from_secs(2)).await;
    let long_gone = passed.scope(bounded(counted())).await;
    assert!(long_gone.is_err(), "got {long_gone:?}");

    assert_eq!(polls.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn work_that_keeps_waking_itself_cannot_keep_the_deadline_from_firing() {
    stopped_at_a_one_second_deadline(busy_forever()).await;
}

/// Busy work that also spends the task's coop budget at every poll: the
/// check before each poll reads the clock, which no budget holds back.
/// (The timer's own exemption is the test after the next.)
#[tokio::test(start_paused = true)]
async fn work_that_exhausts_the_coop_budget_is_still_stopped_at_the_deadline() {
    stopped_at_a_one_second_deadline(spend_budget_forever()).await;
}

/// The deadline's timer is tokio's: waiting under a deadline needs a
/// runtime with time enabled, and says so.
#[test]
#[should_panic(expected = "timers are disabled")]
fn bounded_work_that_waits_under_a_deadline_needs_the_time_driver() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime without its time driver");
    let deadline = Deadline::after(ONE);
    let _ = runtime.block_on(deadline.scope(bounded(std::future::pending::<()>())));
}

/// D5's exemption from the coop budget: work that used up the budget in
/// one poll and then waits for nothing is stopped at the deadline. A timer
/// polled with no budget left would not have been set, and work that never
/// wakes again would never be stopped.
#[tokio::test(start_paused = true)]
async fn work_that_exhausts_the_coop_budget_once_then_waits_is_stopped_at_the_deadline() {
    let start = Instant::now();
    let work = async {
        for _ in 0..200 {
            tokio::task::consume_budget().await;
        }
        std::future::pending::<()>().await;
    };
    let result = tokio::time::timeout(FIVE, Deadline::after(ONE).scope(bounded(work))).await;
    assert!(matches!(result, Ok(Err(_))), "got {result:?}");
    assert_eq!(start.elapsed(), ONE);
}

/// Runs `work` bounded by a one-second deadline and checks that it is still
/// running a millisecond before and stopped at the deadline. Work that keeps
/// the runtime busy keeps the paused clock from advancing by itself, so the
/// clock is moved by hand.
async fn stopped_at_a_one_second_deadline<F>(work: F)
where
    F: Future + Send + 'static,
    F::Output: Send + std::fmt::Debug,
{
    let deadline = Deadline::after(ONE);
    let task = tokio::spawn(deadline.scope(bounded(work)));

    advance(Duration::from_millis(999)).await;
    assert!(!task.is_finished(), "stopped before the deadline");
    advance(Duration::from_millis(1)).await;

    let result = task.await.expect("the task does not panic");
    assert!(result.is_err(), "got {result:?}");
}

#[tokio::test(start_paused = true)]
async fn bounded_takes_the_deadline_current_at_its_first_poll() {
    let one = Deadline::after(ONE);
    let start = Instant::now();
    let mut work = tokio_test::task::spawn(Box::pin(bounded(sleep(Duration::from_secs(10)))));
    assert_eq!(
        work.deadline(),
        None,
        "the deadline is read before the first poll"
    );

    one.sync_scope(|| assert_pending!(work.poll()));
    assert_eq!(work.deadline(), Some(one));

    // Polled from here on outside any scope, it is still bounded by `one`.
    let result = work.await;
    assert!(result.is_err(), "got {result:?}");
    assert_eq!(start.elapsed(), ONE);
}

#[tokio::test(start_paused = true)]
async fn bounded_work_made_outside_a_scope_and_awaited_inside_is_bounded_by_it() {
    let start = Instant::now();
    let work = bounded(sleep(Duration::from_secs(10)));
    let result = Deadline::after(ONE).scope(work).await;
    assert!(result.is_err(), "got {result:?}");
    assert_eq!(start.elapsed(), ONE);
}

#[tokio::test(start_paused = true)]
async fn bounded_work_made_inside_a_scope_and_first_polled_outside_is_unbounded() {
    let start = Instant::now();
    let work = Deadline::after(ONE).sync_scope(|| bounded(sleep(Duration::from_secs(3))));
    let mut work = tokio_test::task::spawn(Box::pin(work));
    assert_pending!(work.poll());
    assert_eq!(work.deadline(), None);

    assert_eq!(work.await, Ok(()));
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn work_done_before_the_deadline_returns_its_value() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(bounded(async {
            sleep(Duration::from_millis(500)).await;
            7
        }))
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_millis(500));

    let ready = tokio_test::task::spawn(Deadline::after(ONE).scope(bounded(async { 8 }))).poll();
    assert_eq!(assert_ready!(ready), Ok(8));
}

#[tokio::test(start_paused = true)]
async fn a_result_that_comes_after_the_deadline_is_not_returned() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(bounded(async {
            sleep(Duration::from_secs(2)).await;
            7
        }))
        .await;
    assert!(result.is_err(), "got {result:?}");
    assert_eq!(start.elapsed(), ONE);
}

#[tokio::test(start_paused = true)]
async fn a_result_ready_when_polled_after_the_deadline_is_not_returned() {
    // Polled by hand: the task is not polled at the deadline, only later,
    // when both the deadline and the work's own timer have passed.
    let mut work = tokio_test::task::spawn(Deadline::after(ONE).scope(bounded(async {
        sleep(Duration::from_millis(1500)).await;
        7
    })));
    assert_pending!(work.poll());

    advance(Duration::from_secs(2)).await;
    let result = assert_ready!(work.poll());
    assert!(result.is_err(), "got {result:?}");
}
