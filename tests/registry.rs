//! Integration tests of `timebox::registry`, grouped by the rules R1–R4 of
//! DESIGN.md §7. Where time matters the clock is tokio's paused clock:
//! nothing sleeps in real time.

mod support;

use std::future::pending;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use timebox::deadline::Deadline;
use timebox::registry::{
    CancelReason, CancellationToken, EndStep, NoticeOutcome, Registry, RemoteCleanup, RequestGuard,
    ToolCalls,
};
use timebox::watchdog::TimeoutKind;
use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};

const TWO: Duration = Duration::from_secs(2);
const FIVE: Duration = Duration::from_secs(5);

/// A flag a cleanup raises, to check later that it ran.
#[derive(Clone, Default)]
struct Flag(Arc<AtomicBool>);

impl Flag {
    fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A shared log of what happened, in order.
#[derive(Clone, Default)]
struct Log<T>(Arc<Mutex<Vec<T>>>);

impl<T: Clone> Log<T> {
    fn push(&self, entry: T) {
        self.0.lock().unwrap().push(entry);
    }

    fn entries(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }
}

// R1: the registry.

#[test]
fn a_registered_id_is_live_until_its_guard_drops() {
    let registry = Registry::new();
    assert!(registry.is_empty());

    let guard = registry.register("req-1").unwrap();
    assert_eq!(guard.id(), "req-1");
    assert_eq!(registry.len(), 1);
    assert!(registry.token("req-1").is_some());
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    assert_eq!(registry.reason("req-1"), Some(CancelReason::Disconnect));

    drop(guard);
    assert!(registry.is_empty());
    assert!(registry.token("req-1").is_none());
    assert_eq!(registry.reason("req-1"), None);
}

#[test]
fn requests_with_different_ids_are_independent() {
    let registry = Registry::new();
    let first = registry.register("a").unwrap();
    let second = registry.register(String::from("b")).unwrap();
    assert_eq!(registry.len(), 2);

    assert!(registry.cancel("a", CancelReason::Shutdown));
    assert!(first.token().is_cancelled());
    assert!(!second.token().is_cancelled());
    assert_eq!(second.reason(), None);

    drop(first);
    assert_eq!(registry.len(), 1);
    assert!(registry.token("b").is_some());
    drop(second);
}

#[test]
fn unknown_ids_are_harmless() {
    let registry = Registry::new();
    let _live = registry.register("known").unwrap();

    assert!(!registry.cancel("unknown", CancelReason::Disconnect));
    assert!(registry.token("unknown").is_none());
    assert_eq!(registry.reason("unknown"), None);
    assert_eq!(registry.len(), 1);
    assert!(!registry.token("known").unwrap().is_cancelled());
}

#[test]
fn registering_a_live_id_is_an_error_that_names_it_and_leaves_the_first_untouched() {
    let registry = Registry::new();
    let first = registry.register("req-1").unwrap();

    let err = registry.register("req-1").unwrap_err();
    assert_eq!(err.id(), "req-1");
    assert_eq!(err.to_string(), "request id `req-1` is already registered");

    assert_eq!(registry.len(), 1);
    assert!(!first.token().is_cancelled());
    // The id still reaches the first request.
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    assert!(first.token().is_cancelled());
    assert_eq!(first.reason(), Some(CancelReason::Disconnect));
}

#[test]
fn an_id_can_be_registered_again_after_its_guard_dropped() {
    let registry = Registry::new();
    let first = registry.register("req-1").unwrap();
    registry.cancel("req-1", CancelReason::Shutdown);
    drop(first);

    let second = registry.register("req-1").unwrap();
    // A fresh request: nothing of the first one's cancellation carries over.
    assert!(!second.token().is_cancelled());
    assert_eq!(second.reason(), None);
    assert_eq!(registry.reason("req-1"), None);
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    assert_eq!(second.reason(), Some(CancelReason::Disconnect));
}

#[test]
fn the_first_cancel_reason_wins() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let inactivity = CancelReason::Timeout(TimeoutKind::Inactivity);

    assert!(registry.cancel("req-1", inactivity));
    assert!(!registry.cancel("req-1", CancelReason::Disconnect));
    assert!(!guard.cancel(CancelReason::Shutdown));
    assert_eq!(registry.reason("req-1"), Some(inactivity));
    assert_eq!(guard.reason(), Some(inactivity));
}

#[tokio::test]
async fn cancel_cancels_the_token_of_the_registered_id() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let token = registry.token("req-1").unwrap();
    assert!(!token.is_cancelled());

    let waiter = tokio::spawn(guard.token().cancelled_owned());
    assert!(registry.cancel("req-1", CancelReason::Disconnect));
    waiter.await.unwrap();
    assert!(token.is_cancelled());
    assert!(guard.token().is_cancelled());
}

#[test]
fn cancel_all_cancels_every_live_request_and_keeps_earlier_reasons() {
    let registry = Registry::new();
    let first = registry.register("a").unwrap();
    let second = registry.register("b").unwrap();
    let third = registry.register("c").unwrap();
    registry.cancel("b", CancelReason::Disconnect);

    assert_eq!(registry.cancel_all(CancelReason::Shutdown), 2);
    assert_eq!(first.reason(), Some(CancelReason::Shutdown));
    assert_eq!(second.reason(), Some(CancelReason::Disconnect));
    assert_eq!(third.reason(), Some(CancelReason::Shutdown));
    assert!([&first, &second, &third]
        .iter()
        .all(|guard| guard.token().is_cancelled()));
}

#[test]
fn the_registry_is_send_and_sync_and_its_pieces_can_cross_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    fn send<T: Send + 'static>(_: &T) {}

    send_sync::<Registry>();
    send_sync::<ToolCalls>();
    send::<RequestGuard>(&Registry::new().register("req").unwrap());
    send(&RemoteCleanup::new().notice("n", async {}).run());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_is_usable_from_many_tasks_at_once() {
    let registry = Registry::new();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let id = format!("req-{i}");
                let guard = registry.register(id.as_str()).unwrap();
                tokio::task::yield_now().await;
                assert!(registry.cancel(&id, CancelReason::Shutdown));
                guard.token().cancelled().await;
                assert_eq!(guard.reason(), Some(CancelReason::Shutdown));
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(registry.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_registrations_of_one_id_admit_exactly_one() {
    let registry = Registry::new();
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.register("same").ok() })
        })
        .collect();
    let mut guards = Vec::new();
    for task in tasks {
        guards.extend(task.await.unwrap());
    }
    assert_eq!(guards.len(), 1);
    assert_eq!(registry.len(), 1);
}

// R2: the guard and its cleanups.

#[tokio::test]
async fn a_task_that_panics_while_holding_its_guard_leaves_no_entry_and_ran_both_cleanups() {
    let registry = Registry::new();
    let synced = Flag::default();
    let (sent, cleaned_up) = oneshot::channel();

    let task = tokio::spawn({
        let registry = registry.clone();
        let synced = synced.clone();
        async move {
            let mut guard = registry.register("req-1").unwrap();
            guard
                .on_cleanup(move || synced.raise())
                .on_async_cleanup(move || async move {
                    sent.send("async cleanup ran").unwrap();
                });
            panic!("handler bug while holding {}", guard.id());
        }
    });

    let err = task.await.unwrap_err();
    assert!(err.is_panic());
    // The sync part ran during the unwind, before anyone awaited anything.
    assert!(synced.is_raised());
    assert!(registry.is_empty());
    assert!(registry.token("req-1").is_none());
    // The async part was spawned and runs.
    assert_eq!(cleaned_up.await.unwrap(), "async cleanup ran");
}

#[test]
fn a_guard_dropped_on_a_thread_without_a_runtime_runs_the_sync_cleanup_and_skips_the_async_one() {
    let registry = Registry::new();
    let synced = Flag::default();
    let async_called = Flag::default();
    let mut guard = registry.register("req-1").unwrap();
    guard.on_cleanup({
        let synced = synced.clone();
        move || synced.raise()
    });
    guard.on_async_cleanup({
        let async_called = async_called.clone();
        move || {
            async_called.raise();
            async {}
        }
    });

    let dropped = thread::spawn(move || drop(guard)).join();

    assert!(dropped.is_ok(), "dropping without a runtime must not panic");
    assert!(synced.is_raised());
    assert!(!async_called.is_raised());
    assert!(registry.is_empty());
}

#[test]
fn cleanups_run_in_the_order_they_were_added_after_the_id_is_gone() {
    let registry = Registry::new();
    let log = Log::default();
    let mut guard = registry.register("req-1").unwrap();
    for step in ["first", "second", "third"] {
        let log = log.clone();
        let registry = registry.clone();
        guard.on_cleanup(move || log.push((step, registry.token("req-1").is_some())));
    }

    drop(guard);

    assert_eq!(
        log.entries(),
        [("first", false), ("second", false), ("third", false)]
    );
}

#[tokio::test]
async fn a_panicking_cleanup_stops_neither_the_others_nor_the_unregistration() {
    let registry = Registry::new();
    let after = Flag::default();
    let (sent, cleaned_up) = oneshot::channel();
    let mut guard = registry.register("req-1").unwrap();
    guard
        .on_cleanup(|| panic!("cleanup bug"))
        .on_cleanup({
            let after = after.clone();
            move || after.raise()
        })
        .on_async_cleanup(move || async move { sent.send(()).unwrap() });

    let dropped = catch_unwind(AssertUnwindSafe(move || drop(guard)));

    // The panic surfaces at the drop, once everything else has been done.
    assert!(dropped.is_err());
    assert!(after.is_raised());
    assert!(registry.is_empty());
    cleaned_up.await.unwrap();
}

#[test]
fn a_cleanup_that_panics_while_a_panic_unwinds_the_guard_leaves_the_first_panic_in_charge() {
    let registry = Registry::new();
    let after = Flag::default();

    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = registry.register("req-1").unwrap();
        guard.on_cleanup(|| panic!("cleanup bug")).on_cleanup({
            let after = after.clone();
            move || after.raise()
        });
        panic!("handler bug");
    }));

    let payload = unwound.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"handler bug"));
    assert!(after.is_raised());
    assert!(registry.is_empty());
}

#[test]
fn dropping_the_guard_cancels_its_token_and_its_tool_calls() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let token = guard.token();
    let tool = guard.tool_calls().register(Some("call_1"));

    drop(guard);

    assert!(token.is_cancelled());
    assert!(tool.is_cancelled());
}

#[test]
fn a_guard_outliving_its_registry_still_drops_cleanly() {
    let ran = Flag::default();
    let mut guard = Registry::new().register("req-1").unwrap();
    guard.on_cleanup({
        let ran = ran.clone();
        move || ran.raise()
    });
    drop(guard);
    assert!(ran.is_raised());
}

// R3: reasons, the ending order and the bounded remote cleanup.

#[test]
fn cancel_reasons_read_as_lowercase_causes() {
    let cases = [
        (CancelReason::Disconnect, "disconnect"),
        (CancelReason::Shutdown, "shutdown"),
        (
            CancelReason::Timeout(TimeoutKind::FirstItem),
            "timeout (first item)",
        ),
        (
            CancelReason::Timeout(TimeoutKind::Inactivity),
            "timeout (inactivity)",
        ),
        (CancelReason::Timeout(TimeoutKind::Total), "timeout (total)"),
        (
            CancelReason::Timeout(TimeoutKind::RequestDeadline),
            "timeout (request deadline)",
        ),
    ];
    for (reason, text) in cases {
        assert_eq!(reason.to_string(), text);
        assert_eq!(reason.is_timeout(), reason.timeout_kind().is_some());
    }
}

#[test]
fn each_reason_ends_the_request_in_the_order_of_r3() {
    use EndStep::{Done, ErrorEvent, Evict, RemoteCleanup};

    for cause in [
        TimeoutKind::FirstItem,
        TimeoutKind::Inactivity,
        TimeoutKind::Total,
        TimeoutKind::RequestDeadline,
    ] {
        assert_eq!(
            CancelReason::Timeout(cause).end_steps(),
            [RemoteCleanup, Evict, ErrorEvent, Done]
        );
    }
    assert_eq!(CancelReason::Disconnect.end_steps(), [RemoteCleanup, Evict]);
    assert_eq!(CancelReason::Shutdown.end_steps(), [Done, RemoteCleanup]);
}

#[tokio::test(start_paused = true)]
async fn a_notice_that_never_returns_ends_the_run_at_the_total_bound() {
    let start = Instant::now();

    let report = RemoteCleanup::new()
        .per_notice(Duration::from_secs(60))
        .notice("stuck tool", pending())
        .notice("never reached", async {})
        .run()
        .await;

    assert_eq!(Instant::now() - start, FIVE);
    assert_eq!(report.elapsed(), FIVE);
    assert_eq!(report.timed_out(), ["stuck tool"]);
    assert_eq!(report.skipped(), ["never reached"]);
    assert!(report.completed().is_empty());
    assert!(!report.is_complete());
}

#[tokio::test(start_paused = true)]
async fn with_the_second_of_three_notices_hanging_the_others_are_sent_and_it_gives_up_after_two_seconds(
) {
    let start = Instant::now();
    let sent = Log::default();
    let notice = |name: &'static str, takes: Duration| {
        let sent = sent.clone();
        async move {
            sleep(takes).await;
            sent.push((name, Instant::now() - start));
        }
    };
    let tenth = Duration::from_millis(100);

    let report = RemoteCleanup::new()
        .notice("first", notice("first", tenth))
        .notice("second", pending())
        .notice("third", notice("third", tenth))
        .run()
        .await;

    assert_eq!(report.completed(), ["first", "third"]);
    assert_eq!(report.timed_out(), ["second"]);
    let outcomes: Vec<_> = report
        .notices()
        .iter()
        .map(|notice| (notice.name(), notice.outcome(), notice.elapsed()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("first", NoticeOutcome::Completed, tenth),
            ("second", NoticeOutcome::TimedOut, TWO),
            ("third", NoticeOutcome::Completed, tenth),
        ]
    );
    assert_eq!(
        sent.entries(),
        [("first", tenth), ("third", tenth + TWO + tenth)]
    );
    assert_eq!(Instant::now() - start, tenth + TWO + tenth);
}

/// A notice is someone else's code: one that panics is reported as such,
/// and the run goes on, so the steps of an ending after it still run.
#[tokio::test(start_paused = true)]
async fn a_notice_that_panics_is_reported_and_the_next_one_still_runs() {
    let start = Instant::now();
    let sent = Log::default();
    // Each notice notes when it ended: one after another, 10 ms each.
    let notice = |name: &'static str| {
        let sent = sent.clone();
        async move {
            sleep(Duration::from_millis(10)).await;
            sent.push((name, start.elapsed()));
        }
    };
    let report = RemoteCleanup::new()
        .notice("first", notice("first"))
        .notice("second", async {
            sleep(Duration::from_millis(10)).await;
            panic!("the tool's client failed");
        })
        .notice("third", notice("third"))
        .run()
        .await;
    assert_eq!(report.completed(), ["first", "third"]);
    assert_eq!(report.panicked(), ["second"]);
    assert!(!report.is_complete());
    assert_eq!(
        sent.entries(),
        [
            ("first", Duration::from_millis(10)),
            ("third", Duration::from_millis(30)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn hanging_notices_share_what_is_left_of_the_total() {
    let start = Instant::now();

    let report = RemoteCleanup::new()
        .notice("a", pending())
        .notice("b", pending())
        .notice("c", pending())
        .notice("d", async {})
        .run()
        .await;

    let elapsed: Vec<_> = report.notices().iter().map(|n| n.elapsed()).collect();
    assert_eq!(elapsed, [TWO, TWO, Duration::from_secs(1), Duration::ZERO]);
    assert_eq!(report.timed_out(), ["a", "b", "c"]);
    assert_eq!(report.skipped(), ["d"]);
    assert_eq!(Instant::now() - start, FIVE);
}

#[tokio::test(start_paused = true)]
async fn the_bounds_are_configurable() {
    let start = Instant::now();

    let report = RemoteCleanup::new()
        .per_notice(Duration::from_millis(300))
        .total(Duration::from_millis(500))
        .notice("a", pending())
        .notice("b", pending())
        .notice("c", async {})
        .run()
        .await;

    assert_eq!(report.timed_out(), ["a", "b"]);
    assert_eq!(report.notices()[1].elapsed(), Duration::from_millis(200));
    assert_eq!(report.skipped(), ["c"]);
    assert_eq!(Instant::now() - start, Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn a_notice_after_the_request_deadline_runs_with_its_own_bound_as_deadline() {
    let start = Instant::now();
    let seen = Log::default();

    // The request ended because its deadline passed; the notice must still go out.
    Deadline::at(start)
        .scope(
            RemoteCleanup::new()
                .notice("tool", {
                    let seen = seen.clone();
                    async move { seen.push(Deadline::current().map(Deadline::instant)) }
                })
                .run(),
        )
        .await;

    assert_eq!(seen.entries(), [Some(start + TWO)]);
}

#[tokio::test(start_paused = true)]
async fn an_empty_cleanup_is_complete_at_once() {
    let cleanup = RemoteCleanup::default();
    assert!(cleanup.is_empty());
    assert_eq!(cleanup.per_notice_bound(), TWO);
    assert_eq!(cleanup.total_bound(), FIVE);

    let report = cleanup.run().await;
    assert!(report.is_complete());
    assert_eq!(report.elapsed(), Duration::ZERO);
}

// R4: tool calls.

#[test]
fn tool_calls_are_claimed_by_id() {
    let calls = ToolCalls::new(&CancellationToken::new());
    calls.register(Some("call_a"));
    calls.register(Some("call_b"));
    assert_eq!(calls.len(), 2);

    assert_eq!(calls.claim(Some("call_b")).unwrap().id(), Some("call_b"));
    assert!(calls.claim(Some("call_b")).is_none());
    assert!(calls.claim(Some("call_c")).is_none());
    assert!(
        calls.claim(None).is_none(),
        "a call with an id waits for its own runner"
    );
    assert_eq!(calls.claim(Some("call_a")).unwrap().id(), Some("call_a"));
    assert!(calls.is_empty());
}

#[test]
fn tool_calls_without_an_id_are_claimed_first_in_first_out() {
    let calls = ToolCalls::new(&CancellationToken::new());
    let decided: Vec<_> = (0..3).map(|_| calls.register(None)).collect();

    // The claimed call shares its token with the decided one: cancelling the
    // claimed call shows which one it is.
    for (i, decided_call) in decided.iter().enumerate() {
        let claimed = calls.claim(None).unwrap();
        claimed.cancel();
        assert!(decided_call.is_cancelled(), "claim {i} took another call");
        assert!(decided[i + 1..].iter().all(|later| !later.is_cancelled()));
    }
    assert!(calls.claim(None).is_none());
}

#[test]
fn a_runner_whose_id_was_not_registered_falls_back_to_the_oldest_call_without_one() {
    let calls = ToolCalls::new(&CancellationToken::new());
    let named = calls.register(Some("call_a"));
    let anonymous = calls.register(None);

    let claimed = calls.claim(Some("call_z")).unwrap();
    assert_eq!(claimed.id(), None);
    claimed.cancel();
    assert!(anonymous.is_cancelled());
    assert!(!named.is_cancelled());
    assert_eq!(calls.len(), 1);
}

#[test]
fn calls_with_the_same_id_are_claimed_in_registration_order() {
    let calls = ToolCalls::new(&CancellationToken::new());
    let first = calls.register(Some("dup"));
    let second = calls.register(Some("dup"));

    calls.claim(Some("dup")).unwrap().cancel();
    assert!(first.is_cancelled());
    assert!(!second.is_cancelled());
}

#[tokio::test]
async fn cancelling_the_request_cancels_its_tool_calls() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let calls = guard.tool_calls();
    calls.register(Some("call_a"));
    let pending_call = calls.register(Some("call_b"));
    let running = calls.claim(Some("call_a")).unwrap();
    let tool = tokio::spawn(running.token().cancelled_owned());

    registry.cancel("req-1", CancelReason::Timeout(TimeoutKind::Total));

    tool.await.unwrap();
    assert!(running.is_cancelled());
    assert!(pending_call.is_cancelled());
}

#[test]
fn cancelling_one_tool_call_leaves_the_request_and_the_others_running() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let calls = guard.tool_calls();
    let first = calls.register(Some("call_a"));
    let second = calls.register(Some("call_b"));

    first.cancel();

    assert!(!second.is_cancelled());
    assert!(!guard.token().is_cancelled());
    assert_eq!(guard.reason(), None);
}

#[test]
fn tool_calls_not_claimed_are_forgotten_when_the_request_ends() {
    let registry = Registry::new();
    let guard = registry.register("req-1").unwrap();
    let calls = guard.tool_calls();
    assert_eq!(guard.tool_calls().len(), 0);
    calls.register(Some("call_a"));
    assert_eq!(guard.tool_calls().len(), 1, "clones share one table");

    drop(guard);

    assert!(calls.is_empty());
    assert!(calls.claim(Some("call_a")).is_none());
}

/// An async cleanup runs in a span of its own that names the request,
/// wherever the guard drops, and not in the request's span, which it
/// would hold open for as long as it runs.
#[tokio::test]
async fn an_async_cleanup_logs_in_a_span_of_its_own_that_names_the_request() {
    let (logs, _guard) = support::logs::Logs::capture();
    let registry = Registry::new();
    let (done, finished) = oneshot::channel();
    let mut guard = registry.register("req-span").unwrap();
    tracing::info_span!("request", id = 7).in_scope(|| {
        guard.on_async_cleanup(|| async move {
            tracing::info!("cleaned up");
            let _ = done.send(());
        });
    });
    drop(guard);
    finished.await.unwrap();
    let line = logs.one_line_with("cleaned up", &[]);
    assert!(
        line.contains("timebox.cleanup{request_id=req-span}"),
        "{line}"
    );
    assert!(!line.contains("request{id=7}"), "{line}");
}

/// A guard dropped while its runtime shuts down (with a task the runtime
/// drops, at the end of `main` or of a test) cannot run its async
/// cleanups there: it says so in a debug line rather than losing them
/// silently, for a cleanup not begun and for one under way. A cleanup
/// that ran to its end says nothing, nor one that panicked (the panic
/// hook said that).
#[test]
fn async_cleanups_dropped_with_their_runtime_are_said() {
    let (logs, _capture) = support::logs::Logs::capture();
    let registry = Registry::new();
    let runtime = current_thread();
    runtime.block_on(async {
        let (done, ended) = tokio::sync::oneshot::channel();
        let mut guard = registry.register("ends").expect("a new id");
        guard.on_async_cleanup(move || async move {
            let _ = done.send(());
        });
        drop(guard);
        ended.await.expect("the cleanup ran");

        let mut guard = registry.register("panics").expect("a new id");
        guard.on_async_cleanup(|| async { panic!("a cleanup bug") });
        drop(guard);

        drop_with_its_cleanup_under_way(&registry, "under-way").await;

        let mut guard = registry.register("not-begun").expect("a new id");
        guard.on_async_cleanup(|| async {});
        tokio::spawn(async move {
            let _guard = guard;
            pending::<()>().await;
        });
    });
    drop(runtime);
    let said = logs.lines_with("dropped before it ended");
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said.iter()
            .any(|line| line.contains("request_id=\"under-way\"")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|line| line.contains("request_id=\"not-begun\"")),
        "{said:?}"
    );
}

/// The same while another panic unwinds (a test that fails, a `main`
/// whose future panics, its runtime dropped on the way out): the cleanup
/// under way is said too.
#[test]
fn async_cleanups_dropped_while_a_panic_unwinds_are_said_too() {
    let (logs, _capture) = support::logs::Logs::capture();
    let registry = Registry::new();
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let runtime = current_thread();
        runtime.block_on(async {
            drop_with_its_cleanup_under_way(&registry, "under-way").await;
            panic!("the test fails");
        });
    }));
    assert!(panicked.is_err());
    logs.one_line_with("dropped before it ended", &["request_id=\"under-way\""]);
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Registers `id` with an async cleanup that never ends, drops its guard,
/// and returns once the cleanup is under way.
async fn drop_with_its_cleanup_under_way(registry: &Registry, id: &str) {
    let (began, under_way) = tokio::sync::oneshot::channel();
    let mut guard = registry.register(id).expect("a new id");
    guard.on_async_cleanup(move || async move {
        let _ = began.send(());
        pending::<()>().await;
    });
    drop(guard);
    under_way.await.expect("the cleanup began");
}
