//! Two-phase shutdown (DESIGN §6): the sequence, its bounds, the in-flight
//! count and the startup warning.

mod support;

use std::time::Duration;

use http::StatusCode;
use timebox::config::Config;
use timebox::shutdown::{InFlight, Shutdown};
use timebox::sim::Sim;
use timebox::{get, routes};
use tokio::time::{sleep, Instant};

use support::http::{request, text};
use support::time::SECS;

fn config(prestop: u64, grace: u64, drain_force: u64) -> Config {
    let mut config = Config::default();
    config.server.prestop_grace_secs = prestop;
    config.server.shutdown_timeout_secs = grace;
    config.server.drain_force_secs = drain_force;
    config
}

/// When phase 1 and phase 2 began, and when the sequence returned, measured
/// from the trigger.
async fn timeline(shutdown: &Shutdown) -> (Duration, Duration, Duration) {
    timeline_checking(shutdown, || {}).await
}

/// [`timeline`], running `right_after_trigger` as soon as the trigger
/// returns, before any time passes.
async fn timeline_checking(
    shutdown: &Shutdown,
    right_after_trigger: impl FnOnce(),
) -> (Duration, Duration, Duration) {
    let start = Instant::now();
    let phase1 = tokio::spawn({
        let token = shutdown.token();
        async move {
            token.cancelled().await;
            start.elapsed()
        }
    });
    let phase2 = tokio::spawn({
        let token = shutdown.drain_token();
        async move {
            token.cancelled().await;
            start.elapsed()
        }
    });
    shutdown.trigger();
    right_after_trigger();
    shutdown.wait_drained().await;
    let done = start.elapsed();
    (phase1.await.unwrap(), phase2.await.unwrap(), done)
}

#[tokio::test(start_paused = true)]
async fn with_nothing_in_flight_phase_two_follows_at_once() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    assert_eq!(timeline(&shutdown).await, (SECS(0), SECS(0), SECS(0)));
}

#[tokio::test(start_paused = true)]
async fn readiness_flips_at_once_and_phase_one_waits_for_the_prestop_grace() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    assert!(shutdown.is_ready());
    let timeline = timeline_checking(&shutdown, || {
        assert!(!shutdown.is_ready(), "readiness flips with the trigger");
    })
    .await;
    assert_eq!(timeline, (SECS(5), SECS(5), SECS(5)));
}

#[tokio::test(start_paused = true)]
async fn phase_two_begins_when_the_last_request_in_flight_ends() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    for ends_after in [10, 20] {
        let guard = shutdown.in_flight().enter();
        tokio::spawn(async move {
            sleep(SECS(ends_after)).await;
            drop(guard);
        });
    }
    assert_eq!(timeline(&shutdown).await, (SECS(0), SECS(20), SECS(20)));
    assert_eq!(shutdown.in_flight().count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_never_ends_is_drained_at_the_end_of_the_grace() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    let guard = shutdown.in_flight().enter();
    let drain = shutdown.drain_token();
    // A stream that ends as soon as it is told to.
    tokio::spawn(async move {
        drain.cancelled().await;
        drop(guard);
    });
    assert_eq!(timeline(&shutdown).await, (SECS(0), SECS(30), SECS(30)));
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ignores_the_drain_is_abandoned_after_drain_force() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    let _stuck = shutdown.in_flight().enter();
    assert_eq!(timeline(&shutdown).await, (SECS(0), SECS(30), SECS(40)));
}

#[tokio::test(start_paused = true)]
async fn a_second_trigger_skips_to_the_end_at_once() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let _stuck = shutdown.in_flight().enter();
    shutdown.trigger();
    let waiting = support::drain::in_background(&shutdown);
    sleep(SECS(2)).await;
    let start = Instant::now();
    shutdown.trigger();
    waiting.await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(shutdown.token().is_cancelled());
    assert!(shutdown.drain_token().is_cancelled());
}

/// A process still starting learns of a trigger: a wait for it ends then,
/// and at once once it came, before any phase of the sequence has begun.
#[tokio::test(start_paused = true)]
async fn a_wait_for_the_trigger_ends_at_the_trigger() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let waiting = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { shutdown.triggered().await }
    });
    sleep(SECS(2)).await;
    assert!(!waiting.is_finished(), "ended with no trigger");
    shutdown.trigger();
    waiting.await.unwrap();
    assert!(!shutdown.is_ready());
    assert!(
        !shutdown.token().is_cancelled(),
        "a trigger alone cancels no token"
    );
    assert!(!shutdown.drain_token().is_cancelled());
    let start = Instant::now();
    shutdown.triggered().await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// What runs after the sequence (a flush) learns of a second trigger: a
/// wait for it ends then, and at once once it came.
#[tokio::test(start_paused = true)]
async fn a_second_trigger_ends_a_wait_for_it_and_says_so() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert!(!shutdown.is_forced(), "one trigger, a drained sequence");
    let waiting = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { shutdown.forced().await }
    });
    sleep(SECS(2)).await;
    assert!(!waiting.is_finished());
    shutdown.trigger();
    waiting.await.unwrap();
    assert!(shutdown.is_forced());
    let start = Instant::now();
    shutdown.forced().await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// A second waiter (a gRPC server sharing the HTTP server's shutdown) that
/// joins during the grace returns with the first, and one that comes after
/// the sequence ended returns at once: neither runs the waits again from
/// its own start.
#[tokio::test(start_paused = true)]
async fn a_waiter_that_joins_late_returns_when_the_sequence_ends() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let stuck = shutdown.in_flight().enter();
    let start = Instant::now();
    shutdown.trigger();
    let first = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            shutdown.wait_drained().await;
            start.elapsed()
        }
    });
    sleep(SECS(20)).await;
    let joined = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            shutdown.wait_drained().await;
            start.elapsed()
        }
    });
    assert_eq!(first.await.unwrap(), SECS(45), "5 + 30 + 10");
    assert_eq!(joined.await.unwrap(), SECS(45), "with the first");
    let after = Instant::now();
    shutdown.wait_drained().await;
    assert_eq!(after.elapsed(), Duration::ZERO, "the sequence is over");
    drop(stuck);
}

/// A wait dropped midway (a caller's own timeout, a server that returned
/// early) leaves the sequence where it was: the next wait takes it up,
/// each phase ending when it would have and told once, rather than
/// running the pre-stop grace and the whole grace again.
#[tokio::test(start_paused = true)]
async fn a_wait_dropped_midway_is_taken_up_where_it_was() {
    let (logs, _guard) = support::logs::Logs::capture();
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let stuck = shutdown.in_flight().enter();
    let start = Instant::now();
    shutdown.trigger();
    let dropped = tokio::time::timeout(SECS(10), shutdown.wait_drained()).await;
    assert!(dropped.is_err(), "phase 1 is under way at 10 s");
    assert!(shutdown.token().is_cancelled());
    shutdown.wait_drained().await;
    assert_eq!(start.elapsed(), SECS(45), "5 + 30 + 10, from the trigger");
    for needle in ["shutdown phase 1", "shutdown phase 2", "shutdown complete"] {
        assert_eq!(logs.lines_with(needle).len(), 1, "{needle}");
    }
    drop(stuck);
}

/// A wait dropped in the pre-stop grace, and a next one long after it: the
/// pre-stop grace is over, phase 1 begins when that wait reaches it, and
/// gets its whole grace from then.
#[tokio::test(start_paused = true)]
async fn a_phase_no_wait_reached_begins_when_one_does() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let stuck = shutdown.in_flight().enter();
    let start = Instant::now();
    shutdown.trigger();
    let dropped = tokio::time::timeout(SECS(3), shutdown.wait_drained()).await;
    assert!(dropped.is_err());
    sleep(SECS(17)).await;
    assert!(!shutdown.token().is_cancelled(), "nothing drove phase 1");
    let phase1 = tokio::spawn({
        let token = shutdown.token();
        async move {
            token.cancelled().await;
            start.elapsed()
        }
    });
    shutdown.wait_drained().await;
    assert_eq!(phase1.await.unwrap(), SECS(20), "at once, when reached");
    assert_eq!(start.elapsed(), SECS(60), "20 + 30 + 10");
    drop(stuck);
}

/// A pre-stop grace too long to add to a clock reading (a configuration
/// `validate` refuses, used all the same) waits as long as there is, and a
/// second trigger still ends it.
#[tokio::test(start_paused = true)]
async fn an_unvalidated_endless_prestop_grace_waits_until_forced() {
    let mut config = config(0, 30, 10);
    config.server.prestop_grace_secs = u64::MAX;
    let shutdown = Shutdown::new(&config);
    shutdown.trigger();
    let drained = support::drain::in_background(&shutdown);
    sleep(SECS(3600)).await;
    assert!(
        !shutdown.token().is_cancelled(),
        "still in the pre-stop grace"
    );
    shutdown.trigger();
    drained.await.expect("the sequence ends, without a panic");
}

/// The pre-stop grace counts from the trigger, not from when the sequence
/// is first waited for.
#[tokio::test(start_paused = true)]
async fn the_prestop_grace_counts_from_the_trigger() {
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let start = Instant::now();
    shutdown.trigger();
    sleep(SECS(3)).await;
    shutdown.wait_drained().await;
    assert_eq!(
        start.elapsed(),
        SECS(5),
        "nothing in flight: done at phase 1"
    );
}

/// G2: one signal is one trigger, however many times the shutdown was told
/// to listen (two servers sharing it, each calling `listen_for_signals`):
/// the request in flight gets its whole grace, not a forced end.
#[cfg(unix)]
#[tokio::test(start_paused = true)]
async fn one_signal_to_a_shutdown_that_listens_twice_is_one_trigger() {
    let shutdown = Shutdown::new(&config(0, 30, 10));
    shutdown.listen_for_signals().unwrap();
    shutdown.clone().listen_for_signals().unwrap();
    let _stuck = shutdown.in_flight().enter();
    let start = Instant::now();
    support::child::sigterm(std::process::id());
    shutdown.wait_drained().await;
    assert_eq!(
        start.elapsed(),
        SECS(40),
        "the grace and the drain, in full"
    );
}

// Phase 1 in front of an app: new requests get 503, admitted ones finish.

#[get("/work", timeout = "off")]
async fn work() -> &'static str {
    sleep(SECS(3)).await;
    "done"
}

#[tokio::test(start_paused = true)]
async fn during_phase_one_new_requests_get_503_and_admitted_ones_finish() {
    let sim = Sim::new(7);
    let shutdown = Shutdown::new(&config(0, 30, 10));
    let app = sim
        .app(routes![work].into_router(&Config::default()))
        .with_shutdown(&shutdown);
    let admitted = tokio::spawn({
        let app = app.clone();
        async move { app.request(request("GET", "/work")).await }
    });
    tokio::task::yield_now().await;
    assert_eq!(shutdown.in_flight().count(), 1);
    let drained = support::drain::in_background(&shutdown);
    shutdown.trigger();
    tokio::task::yield_now().await;
    let refused = app.request(request("GET", "/work")).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    assert_eq!(refused.headers()["cache-control"], "no-store");
    let finished = admitted.await.unwrap();
    assert_eq!(finished.status(), StatusCode::OK);
    assert_eq!(text(finished).await, "done");
    drained.await.unwrap();
    assert_eq!(shutdown.in_flight().count(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_readiness_route_answers_503_from_the_trigger_on() {
    let sim = Sim::new(7);
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let app = sim.app(axum::Router::new().route("/ready", timebox::server::readiness(&shutdown)));
    assert_eq!(app.request(request("GET", "/ready")).await.status(), 200);
    shutdown.trigger();
    assert_eq!(app.request(request("GET", "/ready")).await.status(), 503);
}

#[tokio::test(start_paused = true)]
async fn the_readiness_503_says_whether_the_server_still_serves() {
    let sim = Sim::new(7);
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let app = sim.app(axum::Router::new().route("/ready", timebox::server::readiness(&shutdown)));
    shutdown.trigger();
    let during_grace = text(app.request(request("GET", "/ready")).await).await;
    assert!(
        during_grace.contains("still serves requests during its pre-stop grace"),
        "{during_grace}"
    );
    let drained = support::drain::in_background(&shutdown);
    shutdown.token().cancelled().await;
    let in_phase_one = text(app.request(request("GET", "/ready")).await).await;
    assert!(
        in_phase_one.contains("accepts no new requests"),
        "{in_phase_one}"
    );
    drained.await.unwrap();
}

/// G5, S5: behind a `TimeboxLayer` with a seeded source, the readiness
/// 503's `Retry-After` comes from that source, as the timeout 503's does.
#[tokio::test(start_paused = true)]
async fn the_readiness_retry_after_comes_from_the_layers_source() {
    use timebox::entropy::Entropy;
    use timebox::server::TimeboxLayer;
    use tower::ServiceExt;

    let shutdown = Shutdown::new(&config(5, 30, 10));
    let app = axum::Router::new()
        .route("/ready", timebox::server::readiness(&shutdown))
        .layer(TimeboxLayer::new(&Config::default()).entropy(Entropy::seeded(7)));
    shutdown.trigger();
    let mut seen = Vec::new();
    for _ in 0..20 {
        let response = app.clone().oneshot(request("GET", "/ready")).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        seen.push(
            response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    let source = Entropy::seeded(7);
    let expected: Vec<String> = (0..20).map(|_| source.uniform(1..=3).to_string()).collect();
    assert_eq!(seen, expected);
}

/// The `Retry-After` values of 20 readiness answers during a shutdown, in
/// a simulation with `seed`.
async fn readiness_retry_afters(seed: u64) -> Vec<String> {
    let sim = Sim::new(seed);
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let app = sim.app(axum::Router::new().route("/ready", timebox::server::readiness(&shutdown)));
    shutdown.trigger();
    let mut values = Vec::new();
    for _ in 0..20 {
        let response = app.request(request("GET", "/ready")).await;
        values.push(
            response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    values
}

#[tokio::test(start_paused = true)]
async fn the_readiness_retry_after_replays_for_the_same_seed() {
    let first = readiness_retry_afters(11).await;
    assert_eq!(first, readiness_retry_afters(11).await);
    assert!(first.iter().all(|v| ["1", "2", "3"].contains(&v.as_str())));
    // Jittered, from the seed: not one value, and another seed's differ.
    assert!(first.iter().any(|v| *v != first[0]), "{first:?}");
    assert_ne!(first, readiness_retry_afters(12).await);
}

#[tokio::test(start_paused = true)]
async fn each_phase_is_logged_with_what_it_waits_for_and_the_key_that_sets_it() {
    let (logs, _guard) = support::logs::Logs::capture();
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let guard = shutdown.in_flight().enter();
    shutdown.trigger();
    let drained = support::drain::in_background(&shutdown);
    shutdown.token().cancelled().await;
    drop(guard);
    drained.await.unwrap();
    for (needle, key) in [
        ("pre-stop grace of 5 s", "`server.prestop_grace_secs`"),
        ("shutdown phase 1", "`server.shutdown_timeout_secs`"),
        ("shutdown phase 2", "`server.drain_force_secs`"),
    ] {
        let lines = logs.lines_with(needle);
        assert_eq!(lines.len(), 1, "{needle}: {lines:?}");
        assert!(
            lines[0].contains("INFO") && lines[0].contains(key),
            "{}",
            lines[0]
        );
    }
    assert_eq!(
        logs.lines_with("shutdown complete: nothing in flight")
            .len(),
        1
    );
}

/// A second signal in the pre-stop grace skips every wait after it, and
/// the phases' lines say so rather than what they would have waited for.
#[tokio::test(start_paused = true)]
async fn a_forced_shutdowns_phases_say_they_do_not_wait() {
    let (logs, _guard) = support::logs::Logs::capture();
    let shutdown = Shutdown::new(&config(5, 30, 10));
    let _in_flight = shutdown.in_flight().enter();
    shutdown.trigger();
    let drained = support::drain::in_background(&shutdown);
    shutdown.force();
    drained.await.unwrap();
    for phase in ["shutdown phase 1", "shutdown phase 2"] {
        let lines = logs.lines_with(phase);
        assert_eq!(lines.len(), 1, "{phase}: {lines:?}");
        assert!(lines[0].contains("forced, so not waiting"), "{}", lines[0]);
        assert!(!lines[0].contains("waiting up to"), "{}", lines[0]);
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_prestop_grace_the_trigger_says_phase_one_begins_at_once() {
    let (logs, _guard) = support::logs::Logs::capture();
    let shutdown = Shutdown::new(&config(0, 30, 10));
    shutdown.trigger();
    let lines = logs.lines_with("no pre-stop grace");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("`server.prestop_grace_secs` is 0"));
}

// G3: the count.

#[tokio::test(start_paused = true)]
async fn a_guard_decrements_exactly_once_even_when_its_task_panics() {
    let in_flight = InFlight::new();
    let other = in_flight.enter();
    let guard = in_flight.enter();
    let task = tokio::spawn(async move {
        let _guard = guard;
        panic!("the request failed");
    });
    assert!(task.await.is_err());
    assert_eq!(in_flight.count(), 1, "the other request is still counted");
    drop(other);
    assert_eq!(in_flight.count(), 0);
}

/// G3: a waiter parked on a count above zero is woken when the count gets
/// there. (That a decrement between a waiter's read of the count and its
/// parking is not lost follows from `wait_zero` registering before it
/// reads; a test on one thread cannot put a decrement between the two.)
#[tokio::test(start_paused = true)]
async fn wait_zero_wakes_every_waiter_parked_before_the_count_reaches_zero() {
    let in_flight = InFlight::new();
    for _ in 0..100 {
        let guard = in_flight.enter();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let in_flight = in_flight.clone();
                tokio::spawn(async move { in_flight.wait_zero().await })
            })
            .collect();
        tokio::task::yield_now().await;
        drop(guard);
        for waiter in waiters {
            tokio::time::timeout(SECS(1), waiter)
                .await
                .expect("woken")
                .unwrap();
        }
    }
}

// G4: the startup warning.

#[test]
fn a_shutdown_grace_shorter_than_the_longest_route_plus_five_seconds_warns() {
    let warned = |grace| {
        config(5, grace, 10)
            .validate_with_route_deadline(Some(SECS(30)))
            .unwrap()
            .iter()
            .any(|w| w.key() == "server.shutdown_timeout_secs")
    };
    assert!(warned(30));
    assert!(!warned(35));
}

/// G4's warning advises only what validation takes: for a deadline no
/// shutdown may wait for (over a day), it says to shorten the deadline.
#[test]
fn the_shutdown_warning_never_advises_a_value_validation_refuses() {
    let advice = |route: Duration| {
        let warnings = config(5, 30, 10)
            .validate_with_route_deadline(Some(route))
            .unwrap();
        let warning = warnings
            .iter()
            .find(|w| w.key() == "server.shutdown_timeout_secs")
            .expect("a warning")
            .to_string();
        warning
    };
    assert!(advice(SECS(60)).contains("set it to at least 65"));
    let day = advice(SECS(86_400));
    assert!(!day.contains("set it to"), "{day}");
    assert!(day.contains("shorten the deadline"), "{day}");
}

/// `into_router` cannot refuse a configuration, but it says what is wrong
/// with one, naming each key, instead of mounting it silently.
#[test]
fn into_router_logs_an_invalid_configuration_by_key() {
    let (logs, _guard) = support::logs::Logs::capture();
    let mut config = Config::default();
    config.http.client.timeout_secs = 0;
    let _router: axum::Router = routes![work].into_router(&config);
    let lines = logs.lines_with("http.client.timeout_secs");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("ERROR"), "{}", lines[0]);
}

#[get("/quick", timeout_ms = 5000)]
async fn quick() -> &'static str {
    "quick"
}

#[get("/report", timeout_ms = 120000)]
async fn report() -> &'static str {
    "report"
}

/// G4 at startup: `into_router` warns when the shutdown grace is shorter
/// than its longest route override plus 5 s, naming the key and the route
/// deadline it has to cover.
#[test]
fn into_router_warns_of_a_grace_shorter_than_its_longest_route() {
    let (logs, _guard) = support::logs::Logs::capture();
    let _router: axum::Router = routes![quick, report].into_router(&config(5, 30, 10));
    let lines = logs.lines_with("server.shutdown_timeout_secs");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("WARN"), "{}", lines[0]);
    assert!(lines[0].contains("125"), "120 s + 5 s: {}", lines[0]);

    let (logs, _guard) = support::logs::Logs::capture();
    let _router: axum::Router = routes![quick, report].into_router(&config(5, 125, 10));
    assert!(logs.lines_with("server.shutdown_timeout_secs").is_empty());
}

/// The trigger's line says how long the whole sequence may take, for the
/// orchestrator's kill (Kubernetes' `terminationGracePeriodSeconds`, 30 s
/// by default, is shorter than the defaults' 45 s).
#[tokio::test(start_paused = true)]
async fn the_trigger_says_how_long_the_phases_may_take() {
    use support::logs::Logs;

    let config = Config::default();
    let (logs, _guard) = Logs::capture();
    Shutdown::new(&config).trigger();
    let most = config.server.prestop_grace_secs
        + config.server.shutdown_timeout_secs
        + config.server.drain_force_secs;
    assert_eq!(most, 45);
    logs.one_line_with("shutdown triggered", &["most_secs=45"]);
}

// `serve` and `wait_drained` wait on tokio's timer: on a runtime without
// it they panic at their first poll, with tokio's message, rather than in
// every connection's task (the server answering nothing) or at a phase
// after the trigger (no drain).

/// A runtime with I/O and no timer.
fn without_a_timer() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime without its time driver")
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn serve_needs_the_time_driver_from_its_first_poll() {
    use futures_util::FutureExt;

    let runtime = without_a_timer();
    let shutdown = Shutdown::new(&config(0, 30, 10));
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("loopback binds");
        timebox::server::serve(listener, axum::Router::new(), shutdown).now_or_never()
    });
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn wait_drained_needs_the_time_driver_from_its_first_poll() {
    use futures_util::FutureExt;

    let runtime = without_a_timer();
    let shutdown = Shutdown::new(&config(0, 30, 10));
    runtime.block_on(async { shutdown.wait_drained().now_or_never() });
}
