//! `#[sim_test]` and `timebox::sim::Sim` (DESIGN §8, M1 and M2).

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use timebox::deadline::Deadline;
use timebox::server::{RouteDeadlineLayer, RouteTimeout};
use timebox::sim::Sim;
use timebox::sim_test;
use tokio::time::Instant;

use support::child::run_fixture;

// M2: a seeded entropy.

#[sim_test(seed = 5)]
async fn the_same_seed_gives_the_same_entropy_sequence(sim: Sim) {
    let draws = |sim: &Sim| -> Vec<u64> {
        let entropy = sim.entropy();
        (0..32).map(|_| entropy.next_u64()).collect()
    };
    assert_eq!(sim.seed(), 5);
    assert_eq!(draws(&sim), draws(&Sim::new(5)));
}

#[sim_test(seed = 5)]
async fn different_seeds_give_different_entropy_sequences(sim: Sim) {
    let first: Vec<u64> = (0..8).map(|_| sim.entropy().next_u64()).collect();
    let other = Sim::new(6).entropy();
    let second: Vec<u64> = (0..8).map(|_| other.next_u64()).collect();
    assert_ne!(first, second);
}

// M2: an in-process app with seeded entropy.

#[timebox::get("/stuck", timeout_ms = 50)]
async fn stuck() -> &'static str {
    std::future::pending::<()>().await;
    "never"
}

/// The `Retry-After` values of 20 requests to a stuck route: mounted by
/// the macros, or a plain axum route under `RouteDeadlineLayer` alone.
async fn retry_after_sequence(sim: &Sim, layered: bool) -> Vec<u64> {
    let router = if layered {
        axum::Router::new().route(
            "/stuck",
            axum::routing::get(stuck).layer(RouteDeadlineLayer::new(RouteTimeout::Override(
                Duration::from_millis(50),
            ))),
        )
    } else {
        timebox::routes![stuck].into_router(&timebox::config::Config::default())
    };
    let app = sim.app(router);
    let mut sequence = Vec::new();
    for _ in 0..20 {
        let response = app.request(support::http::request("GET", "/stuck")).await;
        assert_eq!(response.status(), 503);
        let value = response.headers()["retry-after"].to_str().unwrap();
        sequence.push(value.parse().unwrap());
    }
    sequence
}

#[sim_test(seed = 9)]
async fn the_same_seed_gives_the_same_retry_after_sequence(sim: Sim) {
    for layered in [false, true] {
        // Each sequence from a source of its own: the test's, then a fresh one.
        let own = Sim::new(sim.seed());
        let first = retry_after_sequence(&own, layered).await;
        let second = retry_after_sequence(&Sim::new(9), layered).await;
        assert_eq!(first, second, "layered: {layered}");
        assert!(first.iter().all(|s| (1..=3).contains(s)));
        assert!(first.iter().collect::<BTreeSet<_>>().len() > 1, "{first:?}");
        let other = retry_after_sequence(&Sim::new(10), layered).await;
        assert_ne!(first, other, "layered: {layered}");
    }
}

/// The `Retry-After` values a client meets from a stuck host of the
/// simulation's net, one call at a time with no retries.
async fn net_retry_after_sequence(sim: &Sim) -> Vec<u64> {
    let net = sim.net();
    net.host(
        "stuck.sim",
        timebox::routes![stuck].into_router(&timebox::config::Config::default()),
    );
    // No breaker: it would open on these 503s and stop the calls.
    let mut config = timebox::config::Config::default();
    config.breaker.enabled = false;
    let client = sim.client_with(&config);
    let mut sequence = Vec::new();
    for _ in 0..20 {
        let response = client
            .get("http://stuck.sim/stuck")
            .retries(0)
            .send()
            .await
            .expect("the host answers");
        assert_eq!(response.status(), 503);
        let value = response.headers()["retry-after"].to_str().unwrap();
        sequence.push(value.parse().unwrap());
    }
    sequence
}

#[sim_test(seed = 9)]
async fn the_same_seed_gives_the_same_retry_after_sequence_from_a_net_host(sim: Sim) {
    let first = net_retry_after_sequence(&sim).await;
    let second = net_retry_after_sequence(&Sim::new(9)).await;
    assert_eq!(first, second);
    assert!(first.iter().collect::<BTreeSet<_>>().len() > 1, "{first:?}");
    assert_ne!(first, net_retry_after_sequence(&Sim::new(10)).await);
}

/// The `Retry-After` values of 20 answers that a handler's error makes
/// itself (an open breaker's 503), through the app, and through a host of
/// the simulation's net.
async fn error_retry_after_sequences(sim: &Sim) -> (Vec<u64>, Vec<u64>) {
    sim.net().host(
        "down",
        axum::Router::new().fallback(|| async { http::StatusCode::INTERNAL_SERVER_ERROR }),
    );
    let mut config = timebox::config::Config::default();
    config.breaker.minimum_sample_count = 1;
    let client = sim.client_with(&config);
    // The one failure opens the host's breaker.
    let failed = client.get("http://down/").retries(0).send().await.unwrap();
    assert_eq!(failed.status(), 500);
    let calls_down = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let client = client.clone();
            async move { client.get("http://down/").send().await.map(|_| "up") }
        }),
    );
    sim.net().host("front", calls_down.clone());
    let app = sim.app(calls_down);
    // No breaker: it would open on these 503s and stop the calls.
    let mut config = timebox::config::Config::default();
    config.breaker.enabled = false;
    let front = sim.client_with(&config);
    let retry_after = |status: http::StatusCode, headers: &http::HeaderMap| -> u64 {
        assert_eq!(status, 503);
        headers["retry-after"].to_str().unwrap().parse().unwrap()
    };
    let (mut through_app, mut through_net) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let response = app.request(support::http::request("GET", "/")).await;
        through_app.push(retry_after(response.status(), response.headers()));
        let response = front.get("http://front/").retries(0).send().await.unwrap();
        through_net.push(retry_after(response.status(), response.headers()));
    }
    (through_app, through_net)
}

#[sim_test(seed = 9)]
async fn the_same_seed_gives_the_same_retry_after_sequence_from_a_handlers_error(sim: Sim) {
    let first = error_retry_after_sequences(&sim).await;
    assert_eq!(first, error_retry_after_sequences(&Sim::new(9)).await);
    for sequence in [&first.0, &first.1] {
        assert!(
            sequence.iter().collect::<BTreeSet<_>>().len() > 1,
            "{first:?}"
        );
    }
    assert_ne!(first, error_retry_after_sequences(&Sim::new(10)).await);
}

/// M1: the simulation runs on one thread, so its schedule is the seed's.
#[sim_test]
async fn a_sim_test_runs_on_a_current_thread_runtime(sim: Sim) {
    let _ = sim;
    assert_eq!(
        tokio::runtime::Handle::current().runtime_flavor(),
        tokio::runtime::RuntimeFlavor::CurrentThread
    );
}

#[sim_test]
async fn requests_through_the_app_take_virtual_time(sim: Sim) {
    let start = Instant::now();
    let app = sim.app(timebox::routes![stuck].into_router(&timebox::config::Config::default()));
    let _ = app.request(support::http::request("GET", "/stuck")).await;
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}

/// The app is a server apart from the test that calls it: neither its
/// handler nor the body it streams sees the deadline the test awaits it
/// under.
#[sim_test]
async fn the_app_and_its_body_run_without_the_callers_deadline(sim: Sim) {
    fn seen(at: &str) -> String {
        format!("{at}: {}", Deadline::current().is_some())
    }
    let app = sim.app(axum::Router::new().fallback(|| async {
        let handler = seen("handler");
        let body = futures_util::stream::once(async move {
            Ok::<_, std::convert::Infallible>(format!("{handler}, {}", seen("body")))
        });
        axum::body::Body::from_stream(body)
    }));
    let answer = Deadline::after(Duration::from_secs(5))
        .scope(async {
            support::http::text(app.request(support::http::request("GET", "/")).await).await
        })
        .await;
    assert_eq!(answer, "handler: false, body: false");
}

// M1: a paused clock from the start.

#[sim_test]
async fn the_clock_is_paused_and_jumps_to_the_next_timer(_sim: Sim) {
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(3600));
}

#[sim_test]
async fn advance_moves_virtual_time_by_exactly_the_duration(sim: Sim) {
    let start = Instant::now();
    sim.advance(Duration::from_millis(1500)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(1500));
}

#[sim_test]
async fn advance_moves_by_exactly_the_duration_from_within_a_millisecond_too(sim: Sim) {
    for (within, duration) in [(400, 1_500_000), (400, 2_800), (900, 1_100), (0, 700)] {
        tokio::time::advance(Duration::from_micros(within)).await;
        let start = Instant::now();
        sim.advance(Duration::from_micros(duration)).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_micros(duration),
            "{within} µs in"
        );
    }
}

#[sim_test]
async fn advance_fires_each_timer_on_the_way_and_lets_its_task_run(sim: Sim) {
    let ticks = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&ticks);
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    tokio::task::yield_now().await; // it arms its first timer
    sim.advance(Duration::from_secs(10)).await;
    assert_eq!(ticks.load(Ordering::SeqCst), 10);
    ticker.abort();
}

/// A mesh of hosts whose handlers call each other through the sim's
/// clients does not keep its network, and what its handlers hold, alive.
#[tokio::test(start_paused = true)]
async fn a_net_whose_hosts_hold_its_clients_is_freed_with_the_sim() {
    struct Freed(Arc<AtomicBool>);
    impl Drop for Freed {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let freed = Arc::new(AtomicBool::new(false));
    let sim = Sim::new(1);
    let held = Arc::new(Freed(Arc::clone(&freed)));
    let client = sim.client();
    let calls_back = axum::Router::new().fallback(move || {
        let (_held, client) = (Arc::clone(&held), client.clone());
        async move { client.get("http://up/").send().await.map(|_| "called") }
    });
    sim.net().host("up", calls_back);
    drop(sim);
    assert!(freed.load(Ordering::SeqCst), "the host's handler was kept");
}

#[sim_test]
async fn a_test_may_return_a_result(_sim: Sim) -> Result<(), std::num::ParseIntError> {
    // It compiles and passes: `?` works in a `#[sim_test]` body.
    let _: u32 = "42".parse()?;
    Ok(())
}

#[sim_test]
#[should_panic(expected = "expected failure")]
async fn other_test_attributes_are_kept(_sim: Sim) {
    panic!("expected failure");
}

// M1: seeds, the replay line and the liveness bound, seen from outside by
// running the fixtures below as child processes.

#[test]
fn a_failing_test_prints_the_replay_line_with_the_seed_in_hex() {
    let run = run_fixture(
        "fixtures::fails_an_assertion",
        &[("TIMEBOX_SIM_SEED", "42")],
    );
    assert!(!run.success, "the fixture must fail: {run:?}");
    assert!(
        run.stderr.contains(
            "TIMEBOX_SIM_SEED=0x2a cargo test -p timebox-tests fixtures::fails_an_assertion -- --exact\n"
        ),
        "no replay line in: {}",
        run.stderr
    );
}

#[test]
fn the_seed_comes_from_the_environment_in_decimal_or_hex_and_defaults_to_zero() {
    for (env, expected) in [(Some("0x10"), 16), (Some("17"), 17), (None, 0)] {
        let env: Vec<(&str, &str)> = env.map(|v| ("TIMEBOX_SIM_SEED", v)).into_iter().collect();
        let run = run_fixture("fixtures::prints_its_seed", &env);
        assert!(run.success, "{run:?}");
        assert_eq!(seeds_printed(&run.stdout), [expected]);
    }
}

#[test]
fn the_attribute_seed_wins_over_the_environment() {
    let run = run_fixture("fixtures::prints_seed_7", &[("TIMEBOX_SIM_SEED", "99")]);
    assert!(run.success, "{run:?}");
    assert_eq!(seeds_printed(&run.stdout), [7]);
}

#[test]
fn a_malformed_seed_variable_is_an_error_that_names_it() {
    let run = run_fixture("fixtures::prints_its_seed", &[("TIMEBOX_SIM_SEED", "soon")]);
    assert!(!run.success);
    assert!(
        run.stderr.contains("TIMEBOX_SIM_SEED must be"),
        "{}",
        run.stderr
    );
}

#[test]
fn seeds_8_runs_the_body_with_8_distinct_seeds() {
    let run = run_fixture("fixtures::eight_seeds", &[]);
    assert!(run.success, "{run:?}");
    let seeds = seeds_printed(&run.stdout);
    assert_eq!(seeds.len(), 8);
    assert_eq!(seeds.iter().collect::<BTreeSet<_>>().len(), 8);
}

#[test]
fn seeds_replay_names_the_seed_that_failed() {
    let run = run_fixture(
        "fixtures::fails_on_the_third_of_four_seeds",
        &[("TIMEBOX_SIM_SEED", "0x100")],
    );
    assert!(!run.success);
    assert_eq!(seeds_printed(&run.stdout), [0x100, 0x101, 0x102]);
    assert!(
        run.stderr.contains("TIMEBOX_SIM_SEED=0x102 cargo test"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_returned_error_fails_the_test_with_the_replay_line() {
    let run = run_fixture("fixtures::returns_an_error", &[]);
    assert!(!run.success);
    assert!(
        run.stderr.contains("sim test returned an error"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("TIMEBOX_SIM_SEED=0x0 cargo test"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_liveness_bound_fails_a_test_that_awaits_forever() {
    let run = run_fixture(
        "fixtures::awaits_forever",
        &[("TIMEBOX_SIM_LIVENESS_SECS", "60")],
    );
    assert!(!run.success);
    assert!(
        run.stderr
            .contains("still running after 60 s of virtual time"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("TIMEBOX_SIM_SEED=0x0 cargo test"),
        "{}",
        run.stderr
    );
}

#[test]
fn without_the_variable_the_liveness_bound_is_one_day() {
    let run = run_fixture("fixtures::awaits_forever", &[]);
    assert!(!run.success);
    assert!(run.stderr.contains("after 86400 s"), "{}", run.stderr);
}

fn seeds_printed(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        // The harness may print the test's name on the same line first.
        .filter_map(|line| line.split_once("seed=").map(|(_, seed)| seed))
        .map(|seed| seed.parse().expect("fixtures print decimal seeds"))
        .collect()
}

/// The attribute's forms that the macro's pass fixtures only parse
/// (trybuild builds them without `--test`, which drops the `#[test]` the
/// macro emits before it is type-checked), compiled and run here; a test
/// that returns a result and one that must panic are above.
mod as_written {
    use super::*;

    #[sim_test(seed = 0x2a)]
    async fn a_hex_seed(sim: Sim) {
        assert_eq!(sim.seed(), 42);
    }

    #[sim_test(seed = 18_446_744_073_709_551_615u64)]
    async fn the_largest_seed_with_a_u64_suffix(sim: Sim) {
        assert_eq!(sim.seed(), u64::MAX);
    }

    macro_rules! seeded {
        ($name:ident, $seed:literal) => {
            #[sim_test(seed = $seed)]
            async fn $name(sim: Sim) {
                assert_eq!(sim.seed(), $seed);
            }
        };
    }

    seeded!(a_seed_and_a_name_through_macro_rules, 7);
}

/// Tests that print, fail or hang on purpose. They are `#[ignore]`d so a
/// normal run skips them; the tests above run them one at a time as child
/// processes. Run any other way (`--include-ignored`), one that fails or
/// hangs on purpose fails at once saying so, rather than failing as if
/// something were broken, or hanging.
mod fixtures {
    use super::*;

    /// Fails unless the test runs as a fixture's child process.
    fn only_as_a_child() {
        assert!(
            std::env::var_os(support::child::FIXTURE_ENV).is_some(),
            "this test fails or hangs on purpose: the tests of `tests/sim.rs` \
             run it as a child process and check what it prints"
        );
    }

    #[sim_test]
    #[ignore = "fails or hangs on purpose: run as a child process by the tests above"]
    async fn fails_an_assertion(sim: Sim) {
        only_as_a_child();
        assert_eq!(sim.seed(), 0, "fixture failure");
    }

    #[sim_test]
    #[ignore = "a fixture: run as a child process by the tests above"]
    async fn prints_its_seed(sim: Sim) {
        println!("seed={}", sim.seed());
    }

    #[sim_test(seed = 7)]
    #[ignore = "a fixture: run as a child process by the tests above"]
    async fn prints_seed_7(sim: Sim) {
        println!("seed={}", sim.seed());
    }

    #[sim_test(seeds = 8)]
    #[ignore = "a fixture: run as a child process by the tests above"]
    async fn eight_seeds(sim: Sim) {
        println!("seed={}", sim.seed());
    }

    #[sim_test(seeds = 4)]
    #[ignore = "fails or hangs on purpose: run as a child process by the tests above"]
    async fn fails_on_the_third_of_four_seeds(sim: Sim) {
        only_as_a_child();
        println!("seed={}", sim.seed());
        assert_ne!(sim.seed(), 0x102, "fixture failure");
    }

    #[sim_test]
    #[ignore = "fails or hangs on purpose: run as a child process by the tests above"]
    async fn returns_an_error(_sim: Sim) -> Result<(), String> {
        only_as_a_child();
        Err("fixture failure".to_owned())
    }

    #[sim_test]
    #[ignore = "fails or hangs on purpose: run as a child process by the tests above"]
    async fn awaits_forever(_sim: Sim) {
        only_as_a_child();
        std::future::pending::<()>().await;
    }
}
