//! Hedging (DESIGN §14, A3): a second request races a first one that is
//! slow to answer, only when that is safe and affordable. Virtual time.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::any;
use axum::Router;
use http::StatusCode;
use timebox::client::{AttemptKind, Client};
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::observe::Event;
use timebox::sim::Sim;
use timebox::sim_test;
use tokio::time::{sleep, Instant};

use support::observe::{
    budget_levels_after_a_panicking_get, lines, lines_of, tells_a_withdrawal, PanicsAt,
};
use support::time::MS;
use support::upstream::answering_at_the_time_sent;

/// What the host saw: each request's `x-timebox-attempt`, and whether a
/// handler was dropped before it answered.
#[derive(Clone, Default)]
struct Host {
    attempts: Arc<Mutex<Vec<Option<String>>>>,
    dropped: Arc<AtomicUsize>,
}

/// Marks a handler dropped unless it answered.
struct Running(Arc<AtomicUsize>, AtomicBool);

impl Drop for Running {
    fn drop(&mut self) {
        if !self.1.load(Ordering::SeqCst) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Host {
    /// A host whose `n`th request (from 0) takes `latency(n)`.
    fn router(&self, latency: fn(usize) -> u64) -> Router {
        let host = self.clone();
        Router::new().route(
            "/",
            any(move |request: Request| {
                let host = host.clone();
                async move {
                    let n = {
                        let mut attempts = host.attempts.lock().unwrap();
                        attempts.push(
                            request
                                .headers()
                                .get("x-timebox-attempt")
                                .map(|v| v.to_str().unwrap().to_owned()),
                        );
                        attempts.len() - 1
                    };
                    let running = Running(host.dropped.clone(), AtomicBool::new(false));
                    sleep(MS(latency(n))).await;
                    running.1.store(true, Ordering::SeqCst);
                    StatusCode::OK
                }
            }),
        )
    }

    /// A host whose first two requests fail at once (503) and whose later
    /// ones take 1 s.
    fn two_failures_then_slow(&self) -> Router {
        let calls = Arc::new(AtomicUsize::new(0));
        let attempts = self.attempts.clone();
        Router::new().route(
            "/",
            any(move |request: Request| {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let attempts = attempts.clone();
                async move {
                    let marker = request.headers().get("x-timebox-attempt");
                    attempts
                        .lock()
                        .unwrap()
                        .push(marker.map(|v| v.to_str().unwrap().to_owned()));
                    if n < 2 {
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    sleep(MS(1000)).await;
                    StatusCode::OK
                }
            }),
        )
    }

    fn attempts(&self) -> Vec<Option<String>> {
        self.attempts.lock().unwrap().clone()
    }
}

/// The first request is slow (1 s), every later one fast (10 ms).
fn first_slow(n: usize) -> u64 {
    if n == 0 {
        1000
    } else {
        10
    }
}

fn hedging(sim: &Sim, delay_ms: u64) -> Config {
    let mut config = sim.config();
    config.http.client.hedge.enabled = true;
    config.http.client.hedge.delay_ms = Some(delay_ms);
    // Every request may be hedged in these scenarios.
    config.http.client.hedge.max_extra_load = 1.0;
    config
}

#[sim_test]
async fn a_hedge_that_wins_cancels_the_first_attempt(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    let client = sim.client_with(&hedging(&sim, 20));
    let start = Instant::now();
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // The hedge went at 20 ms and answered 10 ms later.
    assert_eq!(Instant::now() - start, MS(30));
    assert_eq!(host.attempts(), [None, Some("2;hedge".to_owned())]);
    assert_eq!(
        host.dropped.load(Ordering::SeqCst),
        1,
        "the slow handler was dropped"
    );
    let told = lines_of(&sim.observed(), &["attempt_", "breaker_call"]);
    assert_eq!(
        told,
        [
            "attempt_started host=up:80 kind=first number=1",
            "attempt_started host=up:80 kind=hedge number=2",
            "attempt_finished host=up:80 kind=first number=1 outcome=cancelled",
            "breaker_call host=up:80 outcome=cancelled",
            "attempt_finished host=up:80 kind=hedge number=2 outcome=2xx",
            "breaker_call host=up:80 outcome=success",
        ]
    );
    // The hedge cost `hedge_cost` (5) of the full bucket's 500 tokens.
    let tokens = lines_of(&sim.observed(), &["budget_tokens"]);
    assert_eq!(
        tokens[..2],
        [
            "budget_tokens host=up:80 tokens=500",
            "budget_tokens host=up:80 tokens=495"
        ],
        "{tokens:?}"
    );
}

#[sim_test]
async fn a_first_attempt_that_fails_leaves_the_race_to_the_hedge(sim: Sim) {
    let host = Host::default();
    // The first attempt outlasts its 1 s timeout; the hedge, sent at 20 ms,
    // answers at 1 010 ms, within its own.
    sim.net().host(
        "up",
        host.router(|n| match n {
            0 => 5000,
            1 => 990,
            _ => 10,
        }),
    );
    let mut config = hedging(&sim, 20);
    config.http.client.timeout_secs = 1;
    let client = sim.client_with(&config);
    let start = Instant::now();
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(Instant::now() - start, MS(1010));
    assert_eq!(
        host.attempts(),
        [None, Some("2;hedge".to_owned())],
        "no retry: the hedge answered"
    );
    let told = lines_of(&sim.observed(), &["attempt_finished"]);
    assert_eq!(
        told,
        [
            "attempt_finished host=up:80 kind=first number=1 outcome=timeout",
            "attempt_finished host=up:80 kind=hedge number=2 outcome=2xx",
        ]
    );
}

/// A server that refuses a request before running it (a timebox server
/// shutting down, overloaded, or judging the deadline too short) has not
/// answered it: its refusal of the hedge leaves the race to the first
/// attempt, which answers.
#[sim_test]
async fn a_hedge_a_server_refused_leaves_the_race_to_the_first_attempt(sim: Sim) {
    let calls = Arc::new(AtomicUsize::new(0));
    sim.net().host(
        "up",
        Router::new().route(
            "/",
            any(move || {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        sleep(MS(100)).await;
                        return StatusCode::OK.into_response();
                    }
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [("retry-after", "1"), ("x-timebox-shed", "shutting_down")],
                    )
                        .into_response()
                }
            }),
        ),
    );
    let client = sim.client_with(&hedging(&sim, 20));
    let start = Instant::now();
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(Instant::now() - start, MS(100));
    let told = lines_of(&sim.observed(), &["attempt_finished"]);
    assert_eq!(
        told,
        [
            "attempt_finished host=up:80 kind=hedge number=2 outcome=5xx",
            "attempt_finished host=up:80 kind=first number=1 outcome=2xx",
        ]
    );
}

/// A timebox server that trusts the deadline it was sent answers both
/// attempts when the time each carried runs out, just before the caller's
/// own deadline: the race ends with the deadline, and the other attempt is
/// told as the deadline's, not as one an answer beat.
#[sim_test]
async fn an_answer_to_the_time_sent_ends_the_race_as_the_deadline(sim: Sim) {
    sim.net()
        .host("up", answering_at_the_time_sent(&sim.config()));
    let client = sim.client_with(&hedging(&sim, 20));
    // The first attempt carries `100`, the hedge `80`: both end at 100 ms.
    let err = Deadline::after(std::time::Duration::from_micros(100_500))
        .scope(client.get("http://up/").send())
        .await
        .expect_err("the server answered the time it was sent");
    assert!(timebox::deadline::is_deadline_exceeded(&err), "{err:?}");
    let told = lines_of(&sim.observed(), &["attempt_finished"]);
    assert_eq!(
        told,
        [
            "attempt_finished host=up:80 kind=hedge number=2 outcome=deadline_exceeded",
            "attempt_finished host=up:80 kind=first number=1 outcome=deadline_exceeded",
        ]
    );
}

/// A redirect that comes as its attempt's timeout runs out starts no hop:
/// it is that attempt's timeout, which leaves the race to the hedge, whose
/// own timeout ends later.
#[sim_test]
async fn a_redirect_that_comes_as_its_attempt_times_out_leaves_the_race_to_the_hedge(sim: Sim) {
    let calls = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let heard = Arc::clone(&next);
    sim.net().host(
        "up",
        Router::new()
            .route(
                "/",
                any(move || {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        if n == 0 {
                            sleep(MS(1000)).await;
                            return (StatusCode::TEMPORARY_REDIRECT, [("location", "/next")])
                                .into_response();
                        }
                        sleep(MS(990)).await;
                        StatusCode::OK.into_response()
                    }
                }),
            )
            .route(
                "/next",
                any(move || {
                    heard.fetch_add(1, Ordering::SeqCst);
                    async { StatusCode::OK }
                }),
            ),
    );
    let mut config = hedging(&sim, 20);
    config.http.client.timeout_secs = 1;
    let client = sim.client_with(&config);
    let start = Instant::now();
    let response = client.get("http://up/").retries(0).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(Instant::now() - start, MS(1010), "the hedge's answer");
    assert_eq!(next.load(Ordering::SeqCst), 0, "no hop was sent");
    let told = lines_of(&sim.observed(), &["attempt_finished"]);
    assert_eq!(
        told,
        [
            "attempt_finished host=up:80 kind=first number=1 outcome=timeout",
            "attempt_finished host=up:80 kind=hedge number=2 outcome=2xx",
        ]
    );
}

#[sim_test]
async fn a_first_attempt_that_answers_before_the_delay_is_not_hedged(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(|_| 10));
    let client = sim.client_with(&hedging(&sim, 20));
    client.get("http://up/").send().await.unwrap();
    assert_eq!(host.attempts(), [None]);
}

#[sim_test]
async fn a_post_is_never_hedged(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    let client = sim.client_with(&hedging(&sim, 20));
    client.post("http://up/").hedge().send().await.unwrap();
    assert_eq!(host.attempts(), [None]);
}

#[sim_test]
async fn a_post_that_may_be_retried_is_still_never_hedged(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    let client = sim.client_with(&hedging(&sim, 20));
    client
        .post("http://up/")
        .retry_non_idempotent()
        .hedge()
        .send()
        .await
        .unwrap();
    assert_eq!(
        host.attempts(),
        [None],
        "hedging asks for an idempotent method"
    );
}

#[sim_test]
async fn a_long_running_call_is_never_hedged(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    let client = sim.client_with(&hedging(&sim, 20));
    client
        .get("http://up/")
        .hedge()
        .long_running()
        .send()
        .await
        .unwrap();
    assert_eq!(host.attempts(), [None]);
}

#[sim_test]
async fn no_hedge_while_the_bucket_is_below_half(sim: Sim) {
    let host = Host::default();
    // Two quick failures (a request and its retry), then slow answers.
    sim.net().host("up", host.two_failures_then_slow());
    let mut config = hedging(&sim, 20);
    config.http.client.max_retries = 1;
    // The retry takes 60 of the 100 tokens.
    config.http.client.retry_budget.capacity = 100;
    config.http.client.retry_budget.transient_cost = 60;
    let client = sim.client_with(&config);
    let failed = client.get("http://up/").send().await.unwrap();
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    // 46 tokens (the call's deposit added 6): below half, so the slow
    // request is not hedged.
    let slow = client.get("http://up/").send().await.unwrap();
    assert_eq!(slow.status(), StatusCode::OK);
    assert_eq!(host.attempts(), [None, None, None]);
    assert!(lines(&sim.observed()).contains(&"budget_tokens host=up:80 tokens=46".to_owned()));
}

#[sim_test]
async fn a_bucket_exactly_half_full_still_hedges(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.two_failures_then_slow());
    let mut config = hedging(&sim, 20);
    config.http.client.max_retries = 1;
    // The retry takes 50 of the 90 tokens and the next call's deposit adds
    // 5: 45, exactly half.
    config.http.client.retry_budget.capacity = 90;
    config.http.client.retry_budget.transient_cost = 50;
    let client = sim.client_with(&config);
    let failed = client.get("http://up/").send().await.unwrap();
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let slow = client.get("http://up/").send().await.unwrap();
    assert_eq!(slow.status(), StatusCode::OK);
    assert_eq!(
        host.attempts(),
        [None, None, None, Some("2;hedge".to_owned())]
    );
    let tokens = lines_of(&sim.observed(), &["budget_tokens"]);
    assert!(
        tokens.ends_with(&[
            "budget_tokens host=up:80 tokens=45".to_owned(),
            "budget_tokens host=up:80 tokens=40".to_owned(),
        ]),
        "{tokens:#?}"
    );
}

#[sim_test]
async fn a_hedge_costs_the_configured_hedge_cost(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    let mut config = hedging(&sim, 20);
    config.http.client.hedge.hedge_cost = 50;
    let client = sim.client_with(&config);
    client.get("http://up/").send().await.unwrap();
    assert_eq!(host.attempts(), [None, Some("2;hedge".to_owned())]);
    let tokens = lines_of(&sim.observed(), &["budget_tokens"]);
    assert_eq!(
        tokens[..2],
        [
            "budget_tokens host=up:80 tokens=500",
            "budget_tokens host=up:80 tokens=450"
        ],
        "{tokens:?}"
    );
}

#[sim_test]
async fn a_hedge_the_breaker_refuses_costs_neither_tokens_nor_a_share(sim: Sim) {
    let host = Host::default();
    // Two failures open the breaker; every later request is slow.
    sim.net().host("up", host.two_failures_then_slow());
    let mut config = hedging(&sim, 20);
    config.http.client.max_retries = 0;
    // A hedge for the third request, but not a second one for the fourth.
    config.http.client.hedge.max_extra_load = 0.4;
    config.breaker.minimum_sample_count = 2;
    config.breaker.open_secs = 1;
    config.breaker.half_open_trials = 1;
    let client = sim.client_with(&config);
    for _ in 0..2 {
        let failed = client.get("http://up/").send().await.unwrap();
        assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    sleep(MS(1000)).await;
    // Half-open: the first attempt takes the one trial, so the breaker
    // refuses the hedge, which is never sent.
    let slow = client.get("http://up/").send().await.unwrap();
    assert_eq!(slow.status(), StatusCode::OK);
    assert_eq!(host.attempts(), [None, None, None]);
    let tokens = lines_of(&sim.observed(), &["budget_tokens"]);
    assert_eq!(
        tokens.last().map(String::as_str),
        Some("budget_tokens host=up:80 tokens=500"),
        "{tokens:#?}"
    );
    // The breaker closed on that success. The fourth request is hedged: the
    // refused hedge gave its place in the share back.
    let hedged = client.get("http://up/").send().await.unwrap();
    assert_eq!(hedged.status(), StatusCode::OK);
    assert_eq!(host.attempts()[3..], [None, Some("2;hedge".to_owned())]);
}

/// Whether `event` tells a hedge's start.
fn tells_a_hedge_start(event: &Event) -> bool {
    matches!(
        event,
        Event::AttemptStarted { attempt, .. } if attempt.kind == AttemptKind::Hedge
    )
}

/// A3: a hedge an observer's panic stops before it is sent gives back its
/// tokens, whether the panic comes as the withdrawal is told or as the
/// hedge starts.
#[sim_test]
async fn a_hedge_an_observer_panic_stops_gives_its_tokens_back(sim: Sim) {
    let tells_a_withdrawal: fn(&Event) -> bool = tells_a_withdrawal;
    for (name, at) in [("a", tells_a_withdrawal), ("b", tells_a_hedge_start)] {
        sim.net().host(name, Host::default().router(first_slow));
        let config = hedging(&sim, 20).observed_by(PanicsAt(at));
        let client = sim.client_with(&config);
        let url = format!("http://{name}/");
        let host = format!("{name}:80");
        let levels =
            budget_levels_after_a_panicking_get(client, url, &host, || sim.observed()).await;
        assert_eq!(
            levels,
            ["tokens=500", "tokens=495", "tokens=500"],
            "full, withdrawn for the hedge, given back"
        );
    }
}

/// A hedging config whose host tables hold one host.
fn one_host(sim: &Sim) -> Config {
    let mut config = hedging(sim, 20);
    config.http.client.retry_budget.max_hosts = 1;
    config
}

#[sim_test]
async fn a_host_the_budget_table_refused_is_not_hedged(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    sim.net().host("known", Host::default().router(|_| 10));
    let client = sim.client_with(&one_host(&sim));
    // A POST, never hedged, takes the one bucket but no hedging stats.
    client.post("http://known/").send().await.unwrap();
    let slow = client.get("http://up/").send().await.unwrap();
    assert_eq!(slow.status(), StatusCode::OK);
    assert_eq!(host.attempts(), [None], "no bucket, no hedge");
    assert_eq!(client.budgets().unbudgeted_hosts(), 1);
}

#[sim_test]
async fn hosts_the_budget_table_refused_leave_the_hedging_stats_to_hosts_it_took(sim: Sim) {
    let host = Host::default();
    sim.net().host("up", host.router(first_slow));
    sim.net().host("other", Host::default().router(|_| 10));
    let client = sim.client_with(&one_host(&sim));
    // `up` takes the one bucket before any call.
    assert!(client
        .budgets()
        .for_uri(&"http://up/".parse().unwrap())
        .is_some());
    // A call that may hedge, to a host with no bucket.
    client.get("http://other/").send().await.unwrap();
    let slow = client.get("http://up/").send().await.unwrap();
    assert_eq!(slow.status(), StatusCode::OK);
    assert_eq!(host.attempts(), [None, Some("2;hedge".to_owned())]);
}

#[sim_test]
async fn no_hedge_once_the_time_left_no_longer_covers_the_median(sim: Sim) {
    // 90 answers of 10 ms and 10 of 18 ms: the median is 10 ms, the p95
    // 18 ms, and neither reaches the 20 ms delay. The 101st request is
    // slow.
    let slowest = |n| match n {
        90..=99 => 18,
        100 => 1000,
        _ => 10,
    };
    let host = Host::default();
    sim.net().host("up", host.router(slowest));
    let client = sim.client_with(&hedging(&sim, 20));
    for _ in 0..100 {
        client.get("http://up/").send().await.unwrap();
    }
    // At the hedge's 20 ms, 5 ms are left: less than the median.
    let result = Deadline::after(MS(25))
        .scope(client.get("http://up/").send())
        .await;
    assert!(result.is_err());
    assert_eq!(host.attempts().len(), 101, "no hedge sent");
    // With 15 ms left at the delay, it is: the median fits, though the
    // p95 and the delay itself do not.
    let host_again = Host::default();
    sim.net().host("again", host_again.router(slowest));
    for _ in 0..100 {
        client.get("http://again/").send().await.unwrap();
    }
    let response = Deadline::after(MS(35))
        .scope(client.get("http://again/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(host_again.attempts()[101], Some("2;hedge".to_owned()));
    // With exactly the median left at the delay, it is too.
    let host_last = Host::default();
    sim.net().host("last", host_last.router(slowest));
    for _ in 0..100 {
        client.get("http://last/").send().await.unwrap();
    }
    let _ = Deadline::after(MS(30))
        .scope(client.get("http://last/").send())
        .await;
    assert_eq!(host_last.attempts()[101], Some("2;hedge".to_owned()));
}

#[sim_test]
async fn at_most_the_extra_load_share_of_a_hosts_requests_is_hedged(sim: Sim) {
    let host = Host::default();
    // Every request is slow: each would be hedged without the cap.
    sim.net().host("up", host.router(|_| 30));
    let mut config = hedging(&sim, 20);
    config.http.client.hedge.max_extra_load = 0.05;
    let client = sim.client_with(&config);
    for _ in 0..200 {
        client.get("http://up/").send().await.unwrap();
    }
    let hedges = host.attempts().iter().filter(|a| a.is_some()).count();
    assert_eq!(hedges, 10, "5 % of 200");
}

#[sim_test]
async fn without_a_fixed_delay_the_hedge_waits_for_the_hosts_p95(sim: Sim) {
    let host = Host::default();
    // 95 answers of 10 ms and 5 of 50 ms: the p95 is 50 ms.
    sim.net().host(
        "up",
        host.router(|n| match n {
            95..=99 => 50,
            100 => 1000,
            _ => 10,
        }),
    );
    let client = uncapped_hedging(&sim);
    hedged_gets(&client, 100).await;
    assert!(
        host.attempts().iter().all(Option::is_none),
        "no estimate, no hedge"
    );
    let start = Instant::now();
    client.get("http://up/").hedge().send().await.unwrap();
    assert_eq!(Instant::now() - start, MS(60), "hedged at the 50 ms p95");
}

/// A client whose requests may all be hedged (no cap on the share), with
/// the delay at the host's p95.
fn uncapped_hedging(sim: &Sim) -> Client {
    let mut config = sim.config();
    config.http.client.hedge.max_extra_load = 1.0;
    sim.client_with(&config)
}

/// `n` GETs of `http://up/`, one after another, each allowed a hedge.
async fn hedged_gets(client: &Client, n: usize) {
    for _ in 0..n {
        client.get("http://up/").hedge().send().await.unwrap();
    }
}

/// A host whose `n`th first attempt (from 0) takes `latency(n)`, and whose
/// hedges take 10 ms.
fn first_attempts_take(latency: fn(usize) -> u64) -> Router {
    let firsts = Arc::new(AtomicUsize::new(0));
    Router::new().route(
        "/",
        any(move |request: Request| {
            let hedge = request.headers().contains_key("x-timebox-attempt");
            let took = if hedge {
                10
            } else {
                latency(firsts.fetch_add(1, Ordering::SeqCst))
            };
            async move {
                sleep(MS(took)).await;
                StatusCode::OK
            }
        }),
    )
}

/// A3: the p95 a hedge waits for counts the slow first attempts that hedges
/// beat, at the time they had taken when they were dropped (a lower bound,
/// and already past the p95 that hedged them). With the winners' times
/// alone the window loses exactly the tail it estimates, and the delay
/// falls to the fast answers' time.
#[sim_test]
async fn the_hedge_delay_keeps_the_slow_attempts_that_hedges_beat(sim: Sim) {
    // 95 of 10 ms and 5 of 50 ms (a p95 of 50 ms), then one in ten takes 1 s.
    sim.net().host(
        "up",
        first_attempts_take(|n| match n {
            0..=94 => 10,
            95..=99 => 50,
            n if n % 10 == 0 => 1000,
            _ => 10,
        }),
    );
    let client = uncapped_hedging(&sim);
    hedged_gets(&client, 200).await;
    // The 201st takes 1 s: hedged at the p95, still 50 ms.
    let start = Instant::now();
    client.get("http://up/").hedge().send().await.unwrap();
    assert_eq!(Instant::now() - start, MS(60), "hedged at the 50 ms p95");
}
