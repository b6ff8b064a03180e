//! Integration tests of `timebox::deadline`, grouped by the rules D1–D7 of
//! DESIGN.md §2. Time is tokio's paused clock throughout: nothing sleeps in
//! real time.

use std::cell::Cell;
use std::error::Error;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use timebox::deadline::header::{self, DEADLINE_HEADER};
use timebox::deadline::{bounded, is_deadline_exceeded, unscoped, Deadline, DeadlineExceeded};
use tokio::sync::oneshot;
use tokio::time::{advance, sleep, sleep_until, Instant};
use tokio_test::{assert_pending, assert_ready};

const ONE: Duration = Duration::from_secs(1);
const FIVE: Duration = Duration::from_secs(5);

/// A `DeadlineExceeded` as users get one: from work bounded by a deadline
/// that has already passed (the type has no public constructor).
async fn deadline_exceeded() -> DeadlineExceeded {
    Deadline::at(Instant::now())
        .scope(bounded(async {}))
        .await
        .expect_err("work under an expired deadline must be stopped")
}

/// Work that never finishes and never waits: it wakes itself at every poll.
fn busy_forever() -> impl Future<Output = ()> {
    poll_fn(|cx| {
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

/// Work that never finishes and uses up tokio's coop budget at every poll.
async fn spend_budget_forever() {
    loop {
        tokio::task::consume_budget().await;
    }
}

// D1: a `Deadline` is a `Copy + Ord` point on tokio's clock; `after`
// saturates; `remaining` is zero once passed; a deadline at now is expired.

#[tokio::test(start_paused = true)]
async fn remaining_counts_down_with_the_clock_and_stays_at_zero() {
    let deadline = Deadline::after(FIVE);
    assert_eq!(deadline.remaining(), FIVE);
    assert!(!deadline.is_expired());

    advance(Duration::from_secs(2)).await;
    assert_eq!(deadline.remaining(), Duration::from_secs(3));
    assert!(!deadline.is_expired());

    advance(Duration::from_secs(3)).await;
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(deadline.is_expired());

    advance(Duration::from_secs(7)).await;
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(deadline.is_expired());
}

#[tokio::test(start_paused = true)]
async fn a_deadline_after_duration_max_does_not_panic_and_is_far_away() {
    let deadline = Deadline::after(Duration::MAX);
    assert!(!deadline.is_expired());
    assert!(
        deadline.remaining() > Duration::from_secs(86_400 * 365 * 10),
        "remaining is only {:?}",
        deadline.remaining()
    );
    assert!(deadline > Deadline::after(Duration::from_secs(86_400 * 365)));
}

#[tokio::test(start_paused = true)]
async fn work_under_a_duration_max_deadline_runs_to_the_end() {
    let start = Instant::now();
    let result = Deadline::after(Duration::MAX)
        .scope(bounded(async {
            sleep(Duration::from_secs(10)).await;
            7
        }))
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_at_now_is_already_expired() {
    let deadline = Deadline::at(Instant::now());
    assert!(deadline.is_expired());
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(Deadline::after(Duration::ZERO).is_expired());
}

#[tokio::test(start_paused = true)]
async fn clamp_is_the_smaller_of_the_limit_and_the_time_left() {
    let deadline = Deadline::after(FIVE);
    advance(Duration::from_secs(2)).await;

    assert_eq!(
        deadline.clamp(Duration::from_secs(30)),
        Duration::from_secs(3)
    );
    assert_eq!(deadline.clamp(ONE), ONE);
    assert_eq!(
        deadline.clamp(Duration::from_secs(3)),
        Duration::from_secs(3)
    );
    assert_eq!(deadline.clamp(Duration::ZERO), Duration::ZERO);

    advance(Duration::from_secs(4)).await;
    assert_eq!(deadline.clamp(ONE), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn the_earlier_deadline_is_the_smaller_and_min_picks_it() {
    fn assert_copy_and_ord<T: Copy + Ord>() {}
    assert_copy_and_ord::<Deadline>();

    let early = Deadline::after(ONE);
    let late = Deadline::after(FIVE);
    assert!(early < late);
    assert!(late > early);
    assert_ne!(early, late);
    assert_eq!(early.min(late), early);
    assert_eq!(late.min(early), early);
    assert_eq!(early.max(late), late);
    assert_eq!(Deadline::after(ONE), early);
}

#[tokio::test(start_paused = true)]
async fn instant_returns_the_point_the_deadline_was_made_at() {
    let at = Instant::now() + Duration::from_millis(1500);
    assert_eq!(Deadline::at(at).instant(), at);
    assert_eq!(Deadline::after(FIVE).instant(), Instant::now() + FIVE);
}

// D2: the current deadline is task-local; `Deadline::current()` is `None`
// outside any scope and never panics, also outside a runtime.

#[test]
fn there_is_no_current_deadline_on_a_test_thread_without_a_runtime() {
    assert_eq!(Deadline::current(), None);
}

#[tokio::test(start_paused = true)]
async fn there_is_no_current_deadline_in_a_runtime_outside_any_scope() {
    assert_eq!(Deadline::current(), None);
}

#[test]
fn there_is_no_current_deadline_in_a_plain_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    assert_eq!(runtime.block_on(async { Deadline::current() }), None);
}

#[test]
fn there_is_no_current_deadline_on_a_plain_thread() {
    let seen = std::thread::spawn(Deadline::current)
        .join()
        .expect("Deadline::current must not panic on a plain thread");
    assert_eq!(seen, None);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_gone_once_its_scope_has_finished() {
    let deadline = Deadline::after(ONE);
    let inside = deadline.scope(async { Deadline::current() }).await;
    assert_eq!(inside, Some(deadline));
    assert_eq!(Deadline::current(), None);
}

// D3: a scope runs its future with `min(deadline, enclosing)` current, read
// afresh at every poll: a scope can only shorten. `sync_scope` likewise.

#[tokio::test(start_paused = true)]
async fn a_longer_scope_inside_a_shorter_one_sees_the_shorter_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let seen = one.scope(five.scope(async { Deadline::current() })).await;
    assert_eq!(seen, Some(one));
}

#[tokio::test(start_paused = true)]
async fn a_shorter_scope_inside_a_longer_one_sees_the_shorter_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let seen = five.scope(one.scope(async { Deadline::current() })).await;
    assert_eq!(seen, Some(one));
}

#[tokio::test(start_paused = true)]
async fn a_scope_built_outside_a_shorter_scope_sees_the_shorter_one_when_polled_in_it() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let fut = five.scope(async { Deadline::current() });
    assert_eq!(one.scope(fut).await, Some(one));
}

#[tokio::test(start_paused = true)]
async fn sync_scope_can_only_shorten_and_restores_the_enclosing_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);

    assert_eq!(one.sync_scope(Deadline::current), Some(one));
    assert_eq!(
        five.sync_scope(|| one.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(
        one.sync_scope(|| five.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(Deadline::current(), None);

    let in_async_scope = five
        .scope(async {
            let shortened = one.sync_scope(Deadline::current);
            let not_lengthened = five.sync_scope(|| {
                Deadline::after(Duration::from_secs(9)).sync_scope(Deadline::current)
            });
            (shortened, not_lengthened, Deadline::current())
        })
        .await;
    assert_eq!(in_async_scope, (Some(one), Some(five), Some(five)));
    assert_eq!(Deadline::current(), None);
}

#[test]
fn sync_scope_works_without_a_runtime() {
    let one = Deadline::after(ONE);
    let five = one.instant() + Duration::from_secs(4);
    let five = Deadline::at(five);
    assert_eq!(
        five.sync_scope(|| one.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(Deadline::current(), None);
}

#[test]
fn a_panic_inside_a_scope_does_not_leave_its_deadline_current() {
    let outer = Deadline::after(Duration::from_secs(5));
    let inner = Deadline::after(ONE);
    let seen_after_panic = outer.sync_scope(|| {
        let caught = std::panic::catch_unwind(|| inner.sync_scope(|| panic!("inside the scope")));
        assert!(caught.is_err());
        Deadline::current()
    });
    assert_eq!(seen_after_panic, Some(outer));
    assert_eq!(Deadline::current(), None);
}

#[tokio::test(start_paused = true)]
async fn a_scope_reads_the_enclosing_deadline_again_at_every_poll() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let (tx, rx) = oneshot::channel::<()>();
    let mut fut = pin!(five.scope(async move {
        let at_first_poll = Deadline::current();
        rx.await.expect("the sender is not dropped");
        let at_second_poll = Deadline::current();
        (at_first_poll, at_second_poll)
    }));

    // First poll, outside any other scope: the scope's own deadline.
    let first = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    assert!(first.is_pending());

    // Second poll, inside a shorter scope: the shorter deadline.
    tx.send(()).expect("the receiver is alive");
    let (at_first_poll, at_second_poll) = one.scope(fut).await;
    assert_eq!(at_first_poll, Some(five));
    assert_eq!(at_second_poll, Some(one));
}

// D4: `tokio::spawn` does not carry the deadline; `deadline.scope(..)` carries
// it on purpose; `unscoped` runs with none.

#[tokio::test(start_paused = true)]
async fn a_task_spawned_inside_a_scope_sees_no_deadline() {
    let one = Deadline::after(ONE);
    let (in_scope, in_task) = one
        .scope(async {
            let task = tokio::spawn(async { Deadline::current() });
            (
                Deadline::current(),
                task.await.expect("the task does not panic"),
            )
        })
        .await;
    assert_eq!(in_scope, Some(one));
    assert_eq!(in_task, None);
}

#[tokio::test(start_paused = true)]
async fn a_spawned_task_wrapped_in_the_scope_sees_the_deadline() {
    let one = Deadline::after(ONE);
    let in_task = one
        .scope(async {
            let deadline = Deadline::current().expect("inside the scope");
            tokio::spawn(deadline.scope(async { Deadline::current() }))
                .await
                .expect("the task does not panic")
        })
        .await;
    assert_eq!(in_task, Some(one));
}

#[tokio::test(start_paused = true)]
async fn bounded_work_in_a_task_spawned_inside_a_scope_is_not_stopped_by_it() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(async {
            tokio::spawn(bounded(async {
                sleep(Duration::from_secs(3)).await;
                7
            }))
            .await
            .expect("the task does not panic")
        })
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn unscoped_work_inside_a_scope_sees_no_deadline() {
    let one = Deadline::after(ONE);
    let (in_scope, in_unscoped) = one
        .scope(async {
            (
                Deadline::current(),
                unscoped(async { Deadline::current() }).await,
            )
        })
        .await;
    assert_eq!(in_scope, Some(one));
    assert_eq!(in_unscoped, None);
}

#[tokio::test(start_paused = true)]
async fn bounded_work_inside_unscoped_runs_to_completion_past_the_outer_deadline() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(unscoped(bounded(async {
            sleep(Duration::from_secs(3)).await;
            7
        })))
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

// D5: `bounded` reads the deadline at its first poll and is poll-gated: at or
// past the deadline it returns `DeadlineExceeded` without polling again.

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
    let deadline = Deadline::after(ONE);
    let task = tokio::spawn(deadline.scope(bounded(busy_forever())));

    // The busy task keeps the runtime from idling, so the paused clock never
    // advances by itself: move it by hand.
    advance(Duration::from_millis(999)).await;
    assert!(!task.is_finished(), "stopped before the deadline");
    advance(Duration::from_millis(1)).await;

    let result = task.await.expect("the task does not panic");
    assert!(result.is_err(), "got {result:?}");
}

#[tokio::test(start_paused = true)]
async fn work_that_exhausts_the_coop_budget_is_still_stopped_at_the_deadline() {
    let deadline = Deadline::after(ONE);
    let task = tokio::spawn(deadline.scope(bounded(spend_budget_forever())));

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

// D6: `DeadlineExceeded` displays "deadline exceeded", becomes an
// `io::Error` of kind `TimedOut`, and `is_deadline_exceeded` finds it anywhere
// in a `source()` chain.

#[derive(Debug)]
struct Outer {
    source: Middle,
}

impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request failed")
    }
}

impl Error for Outer {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

#[derive(Debug)]
struct Middle {
    source: DeadlineExceeded,
}

impl fmt::Display for Middle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lookup failed")
    }
}

impl Error for Middle {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// A user error wrapping something that is not a deadline.
#[derive(Debug)]
struct Unrelated {
    source: io::Error,
}

impl fmt::Display for Unrelated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("save failed")
    }
}

impl Error for Unrelated {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

#[tokio::test(start_paused = true)]
async fn deadline_exceeded_displays_as_deadline_exceeded() {
    let err = deadline_exceeded().await;
    assert_eq!(err.to_string(), "deadline exceeded");
}

#[tokio::test(start_paused = true)]
async fn deadline_exceeded_becomes_a_timed_out_io_error() {
    let err = io::Error::from(deadline_exceeded().await);
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn is_deadline_exceeded_finds_it_two_links_deep_in_a_user_error() {
    let err = Outer {
        source: Middle {
            source: deadline_exceeded().await,
        },
    };
    assert!(is_deadline_exceeded(&err));
    assert!(is_deadline_exceeded(&err.source));
    assert!(is_deadline_exceeded(&err.source.source));
}

#[tokio::test(start_paused = true)]
async fn is_deadline_exceeded_finds_it_inside_an_io_error() {
    let io_err = io::Error::from(deadline_exceeded().await);
    assert!(is_deadline_exceeded(&io_err));

    let wrapped = Unrelated { source: io_err };
    assert!(is_deadline_exceeded(&wrapped));
}

#[test]
fn is_deadline_exceeded_is_false_for_an_unrelated_error_chain() {
    let disk_full = Unrelated {
        source: io::Error::other("disk full"),
    };
    assert!(!is_deadline_exceeded(&disk_full));

    // A timeout that is not a deadline is not mistaken for one.
    let socket_timeout = Unrelated {
        source: io::Error::new(io::ErrorKind::TimedOut, "read timed out"),
    };
    assert!(!is_deadline_exceeded(&socket_timeout));
    assert!(!is_deadline_exceeded(&io::Error::from(
        io::ErrorKind::TimedOut
    )));
}

// D7: the header carries the time left as a plain whole number of
// milliseconds; parsing is strict; several values mean none.

#[test]
fn the_deadline_header_is_named_x_timebox_deadline_ms() {
    assert_eq!(DEADLINE_HEADER.as_str(), "x-timebox-deadline-ms");
}

#[test]
fn plain_whole_milliseconds_parse() {
    for (value, millis) in [("1500", 1500), ("0", 0), (" 20 ", 20), ("\t7\t", 7)] {
        assert_eq!(
            header::parse(&HeaderValue::from_static(value)),
            Some(Duration::from_millis(millis)),
            "parsing {value:?}"
        );
    }
}

#[test]
fn anything_but_plain_whole_milliseconds_does_not_parse() {
    for value in [
        "-1",
        "1.5",
        "+5",
        "1e3",
        "5ms",
        "soon",
        "",
        "   ",
        "1 500",
        "0x10",
        "18446744073709551616",
        "123456789012345678901",
    ] {
        assert_eq!(
            header::parse(&HeaderValue::from_static(value)),
            None,
            "parsing {value:?}"
        );
    }
}

#[test]
fn u64_max_milliseconds_parse() {
    let value = HeaderValue::from_str(&u64::MAX.to_string()).expect("digits are a valid value");
    assert_eq!(header::parse(&value), Some(Duration::from_millis(u64::MAX)));
}

#[test]
fn to_value_writes_whole_milliseconds_rounded_down() {
    assert_eq!(header::to_value(Duration::from_millis(1500)), "1500");
    assert_eq!(header::to_value(Duration::from_micros(2_999_999)), "2999");
    assert_eq!(header::to_value(Duration::from_micros(999)), "0");
    assert_eq!(header::to_value(Duration::ZERO), "0");
}

#[test]
fn to_value_saturates_at_u64_max_milliseconds() {
    assert_eq!(
        header::to_value(Duration::MAX),
        u64::MAX.to_string().as_str()
    );
    let just_over = Duration::from_millis(u64::MAX) + Duration::from_millis(1);
    assert_eq!(header::to_value(just_over), u64::MAX.to_string().as_str());
}

#[test]
fn to_value_parses_back_to_the_same_milliseconds() {
    for millis in [0, 1, 1500, u64::MAX] {
        let remaining = Duration::from_millis(millis);
        assert_eq!(header::parse(&header::to_value(remaining)), Some(remaining));
    }
}

#[test]
fn a_single_deadline_header_is_used() {
    let mut headers = HeaderMap::new();
    headers.insert(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(
        header::from_headers(&headers),
        Some(Duration::from_millis(1500))
    );
}

#[test]
fn no_deadline_header_means_no_deadline() {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::ACCEPT, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&headers), None);
}

#[test]
fn an_unparseable_deadline_header_is_ignored() {
    let mut headers = HeaderMap::new();
    headers.insert(DEADLINE_HEADER, HeaderValue::from_static("soon"));
    assert_eq!(header::from_headers(&headers), None);
}

#[test]
fn several_deadline_headers_mean_no_deadline() {
    let mut different = HeaderMap::new();
    different.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    different.append(DEADLINE_HEADER, HeaderValue::from_static("20"));
    assert_eq!(header::from_headers(&different), None);

    let mut same = HeaderMap::new();
    same.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    same.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&same), None);

    let mut one_bad = HeaderMap::new();
    one_bad.append(DEADLINE_HEADER, HeaderValue::from_static("soon"));
    one_bad.append(DEADLINE_HEADER, HeaderValue::from_static("1500"));
    assert_eq!(header::from_headers(&one_bad), None);
}
