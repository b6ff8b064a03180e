//! The outbound client (DESIGN §4), on the simulated network unless the
//! socket is the point.

mod support;

use std::future::pending;
use std::time::Duration;

use axum::response::IntoResponse;
use futures_util::StreamExt;
use http::StatusCode;
use timebox::client::{Client, ClientError, RequestBuilder};
use timebox::config::Config;
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::sim::Sim;
use timebox::{get, routes, sim_test};
use tokio::time::{sleep, Instant};

use support::http::request;
use support::logs::has_field;
use support::observe::lines_of;
use support::time::{MS, SECS};
use support::upstream::{answering_at_the_time_sent, recording, Hit, Recorder};

fn hanging(recorder: &Recorder) -> axum::Router {
    recording(recorder, |_| async {
        pending::<()>().await;
        "never"
    })
}

/// An upstream that answers `status` after `delay`.
fn delayed(recorder: &Recorder, delay: Duration, status: StatusCode) -> axum::Router {
    recording(recorder, move |_| async move {
        sleep(delay).await;
        status
    })
}

fn echo(recorder: &Recorder) -> axum::Router {
    recording(recorder, |_| async { "ok" })
}

// C1: attempts live inside the deadline.

#[sim_test]
async fn a_route_calling_a_hanging_upstream_answers_503_at_its_deadline(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", hanging(&recorder));
    let client = sim.client();
    let app = sim.app(
        axum::Router::new()
            .route(
                "/",
                axum::routing::get(move || {
                    let client = client.clone();
                    async move {
                        client
                            .get("http://up/")
                            .send()
                            .await
                            .map(|r| r.status().to_string())
                    }
                }),
            )
            .layer(timebox::server::RouteDeadlineLayer::new(
                timebox::server::RouteTimeout::Override(SECS(5)),
            )),
    );
    let start = Instant::now();
    let response = app.request(request("GET", "/")).await;
    assert_eq!(response.status(), 503);
    let took = start.elapsed();
    assert!(took >= SECS(5) && took <= SECS(5) + MS(10), "{took:?}");
    let hits = recorder.hits();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|hit| hit.at < SECS(5)), "{hits:?}");
    // The attempt ran under the route's deadline, not the client's own.
    assert_eq!(hits[0].deadline_header.as_deref(), Some("5000"));
}

#[sim_test]
async fn retries_of_a_slow_503_upstream_all_start_before_the_deadline(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        delayed(&recorder, SECS(2), StatusCode::SERVICE_UNAVAILABLE),
    );
    let client = sim.client();
    let outcome = Deadline::after(SECS(5))
        .scope(async { client.get("http://up/").send().await })
        .await;
    let hits = recorder.hits();
    assert!(hits.len() >= 2, "{hits:?}");
    assert!(hits.iter().all(|hit| hit.at < SECS(5)), "{hits:?}");
    match outcome {
        Ok(response) => assert_eq!(response.status(), 503),
        Err(err) => assert!(err.is_deadline_exceeded(), "{err}"),
    }
}

// C3: the deadline header.

#[sim_test]
async fn an_upstream_sees_the_time_left_of_the_route(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let client = sim.client();
    Deadline::after(SECS(5))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(recorder.hits()[0].deadline_header.as_deref(), Some("5000"));
}

/// C2, B6: a timebox server that trusts the deadline it was sent answers
/// it when that time runs out, a fraction of a millisecond before the
/// caller's own deadline (the request carried whole milliseconds). That
/// answer is the caller's deadline passing, not the host failing.
#[sim_test]
async fn a_servers_answer_to_the_time_sent_is_the_callers_deadline(sim: Sim) {
    sim.net()
        .host("up", answering_at_the_time_sent(&sim.config()));
    let client = sim.client();
    let start = Instant::now();
    // The request carries `100`.
    let err = Deadline::after(Duration::from_micros(100_500))
        .scope(client.get("http://up/").send())
        .await
        .expect_err("the server answered the time it was sent");
    assert_eq!(
        Instant::now() - start,
        MS(100),
        "before the caller's own deadline"
    );
    assert!(is_deadline_exceeded(&err), "{err:?}");
    let told = lines_of(&sim.observed(), &["attempt_finished", "breaker_call"]);
    assert_eq!(
        told,
        [
            "attempt_finished host=up:80 kind=first number=1 outcome=deadline_exceeded",
            "breaker_call host=up:80 outcome=cancelled",
        ]
    );
}

/// So is a proxy's `408` then: Envoy ends a stream at the `grpc-timeout`
/// it carries (Istio turns that on for every HTTP route) with `408
/// downstream duration timeout`.
#[sim_test]
async fn a_proxys_408_at_the_time_sent_is_the_callers_deadline(sim: Sim) {
    async fn timing_out(headers: http::HeaderMap) -> StatusCode {
        let sent = headers
            .get("grpc-timeout")
            .and_then(timebox::grpc::timeout::parse)
            .expect("the client sends grpc-timeout");
        sleep(sent).await;
        StatusCode::REQUEST_TIMEOUT
    }
    sim.net()
        .host("up", axum::Router::new().fallback(timing_out));
    let mut config = sim.config();
    config.http.client.deadline_headers = vec!["grpc-timeout".to_owned()];
    let client = sim.client_with(&config);
    let start = Instant::now();
    let err = Deadline::after(Duration::from_micros(100_500))
        .scope(client.get("http://up/").send())
        .await
        .expect_err("the proxy answered the time it was sent");
    assert_eq!(Instant::now() - start, MS(100), "before the caller's own");
    assert!(is_deadline_exceeded(&err), "{err:?}");
}

/// ...but a `408` well before then is the host's own answer, returned as
/// it came.
#[sim_test]
async fn a_hosts_own_408_before_the_time_sent_is_its_answer(sim: Sim) {
    sim.net().host(
        "up",
        axum::Router::new().fallback(|| async { StatusCode::REQUEST_TIMEOUT }),
    );
    let start = Instant::now();
    let response = Deadline::after(SECS(2))
        .scope(sim.client().get("http://up/").retries(0).send())
        .await
        .expect("the host's answer");
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[sim_test]
async fn no_deadline_sends_no_header(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    sim.client().get("http://up/").send().await.unwrap();
    assert_eq!(recorder.hits()[0].deadline_header, None);
}

#[sim_test]
async fn send_deadline_header_false_sends_none(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let mut config = Config::default();
    config.http.client.send_deadline_header = false;
    let client = sim.client_with(&config);
    Deadline::after(SECS(5))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(recorder.hits()[0].deadline_header, None);
}

/// Sends `GET http://up{path}` with the caller's own
/// `x-timebox-deadline-ms`, a line per value.
async fn send_with_deadline_header(client: &Client, path: &str, values: &[&str]) {
    let mut request = client.get(format!("http://up{path}"));
    for &value in values {
        request = request.header("x-timebox-deadline-ms", value);
    }
    request.send().await.unwrap();
}

/// How many `x-timebox-deadline-ms` lines `hit` carried, and the time the
/// first says.
fn deadline_header_sent(hit: &Hit) -> (usize, Option<u64>) {
    let lines = hit.headers.get_all("x-timebox-deadline-ms").iter().count();
    let ms = hit
        .deadline_header
        .as_deref()
        .map(|value| value.parse().expect("whole milliseconds"));
    (lines, ms)
}

#[sim_test]
async fn a_callers_header_is_kept_when_shorter(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let client = sim.client();
    send_with_deadline_header(&client, "/a", &["42"]).await;
    Deadline::after(SECS(1))
        .scope(send_with_deadline_header(&client, "/b", &["5000"]))
        .await;
    let hits = recorder.hits();
    assert_eq!(deadline_header_sent(&hits[0]), (1, Some(42)));
    let (lines, second) = deadline_header_sent(&hits[1]);
    assert_eq!(lines, 1);
    assert!(second.is_some_and(|ms| ms <= 1000), "{second:?}");
}

/// A caller's header that does not parse, or comes twice, grants nothing,
/// as on a request a server receives: the call goes under the task's
/// deadline alone, with one value of its own, and a warning names the
/// header.
#[sim_test]
async fn a_callers_header_that_does_not_parse_is_ignored_and_said(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let client = sim.client();
    send_with_deadline_header(&client, "/a", &["1.5s"]).await;
    Deadline::after(SECS(1))
        .scope(send_with_deadline_header(&client, "/b", &["300", "200"]))
        .await;
    let hits = recorder.hits();
    assert_eq!(
        deadline_header_sent(&hits[0]),
        (0, None),
        "no deadline, no header"
    );
    let (lines, second) = deadline_header_sent(&hits[1]);
    assert_eq!(lines, 1);
    assert!(
        second.is_some_and(|ms| (301..=1000).contains(&ms)),
        "{second:?}: the task's deadline, not the caller's values"
    );
    logs.one_line_with(
        r#"is "1.5s", not a whole number of milliseconds"#,
        &["WARN", r#"header="x-timebox-deadline-ms""#],
    );
    logs.one_line_with(
        "is set more than once",
        &["WARN", r#"header="x-timebox-deadline-ms""#],
    );
}

#[sim_test]
async fn a_retry_carries_only_what_is_left_of_the_callers_header(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            if n == 1 {
                sleep(MS(60)).await;
                StatusCode::BAD_GATEWAY
            } else {
                StatusCode::OK
            }
        }),
    );
    let response = sim
        .client()
        .get("http://up/")
        .header("x-timebox-deadline-ms", "200")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2);
    let retry: u64 = hits[1].deadline_header.as_deref().unwrap().parse().unwrap();
    assert!(retry <= 140, "{retry}");
}

// C2: deadline errors from a handler answer 504.

#[get("/scoped")]
async fn scoped_call(
    axum::extract::State(client): axum::extract::State<Client>,
) -> Result<String, ClientError> {
    let response = Deadline::after(SECS(5))
        .scope(client.get("http://up/").send())
        .await?;
    Ok(response.status().to_string())
}

#[sim_test]
async fn a_handlers_own_deadline_error_answers_504_after_one_attempt(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", hanging(&recorder));
    let router = routes![scoped_call]
        .into_router(&Config::default())
        .with_state(sim.client());
    let app = sim.app(router);
    let start = Instant::now();
    let response = app.request(request("GET", "/scoped")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(start.elapsed() <= SECS(5));
    sim.advance(SECS(60)).await;
    assert_eq!(recorder.count(), 1);
}

#[sim_test]
async fn an_expired_deadline_makes_no_attempt(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let err = Deadline::after(Duration::ZERO)
        .scope(sim.client().get("http://up/").send())
        .await
        .unwrap_err();
    assert!(err.is_deadline_exceeded());
    assert_eq!(err.to_string(), "deadline exceeded");
    assert_eq!(err.into_response().status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(recorder.count(), 0);
}

// C5, C6: a 429 whose hint does not fit comes back at once, free.

#[sim_test]
async fn a_429_whose_retry_after_does_not_fit_returns_at_once_and_charges_nothing(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |_| async {
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "10")],
                "slow down",
            )
        }),
    );
    let client = sim.client();
    let start = Instant::now();
    let response = Deadline::after(SECS(5))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(recorder.count(), 1);
    let budget = client
        .budgets()
        .for_uri(&"http://up/".parse().unwrap())
        .unwrap();
    assert!(
        (budget.tokens() - 500.0).abs() < 1e-9,
        "{}",
        budget.tokens()
    );
    assert_eq!(text_of(response).await, "slow down");
}

/// How long a call waits before its one retry, after a 503 with
/// `Retry-After: 3600` (then a 200), under `config`.
async fn wait_after_an_hour_long_hint(sim: &Sim, host: &str, config: &Config) -> Duration {
    let recorder = Recorder::new();
    sim.net().host(
        host,
        recording(&recorder, |n| async move {
            if n == 1 {
                (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "3600")]).into_response()
            } else {
                StatusCode::OK.into_response()
            }
        }),
    );
    let start = Instant::now();
    let response = sim
        .client_with(config)
        .get(format!("http://{host}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(recorder.count(), 2);
    start.elapsed()
}

#[sim_test]
async fn a_retry_after_hint_waits_at_most_5_s_and_max_retry_after_secs(sim: Sim) {
    // The backoff before the first retry is at most 100 ms (C5).
    let waited = wait_after_an_hour_long_hint(&sim, "capped", &Config::default()).await;
    assert!(waited >= SECS(5) && waited <= MS(5100), "{waited:?}");
    let mut config = Config::default();
    config.http.client.max_retry_after_secs = 2;
    let waited = wait_after_an_hour_long_hint(&sim, "configured", &config).await;
    assert!(waited >= SECS(2) && waited <= MS(2100), "{waited:?}");
}

async fn text_of(response: timebox::client::Response) -> String {
    response.text().await.unwrap()
}

// SimNet (M2).

async fn scripted_run(seed: u64) -> Vec<String> {
    let sim = Sim::new(seed);
    let recorder = Recorder::new();
    let net = sim.net();
    net.host("up", echo(&recorder))
        .latency(MS(5), MS(50))
        .drop_rate(0.2);
    let client = sim.client();
    for i in 0..20 {
        let _ = client.get(format!("http://up/{i}")).retries(0).send().await;
    }
    net.events().iter().map(ToString::to_string).collect()
}

#[sim_test]
async fn the_same_seed_gives_the_same_event_log(_sim: Sim) {
    let first = scripted_run(3).await;
    assert_eq!(first.len(), 20);
    assert_eq!(first, scripted_run(3).await);
    assert_ne!(first, scripted_run(4).await);
}

/// When a `ClientLayer` given the run's source sends its attempts to a
/// host that answers 503: its backoff is jittered.
async fn layer_attempts_at(seed: u64) -> Vec<Duration> {
    use http_body_util::{Empty, Full};
    use tower::{Layer, ServiceExt};

    let sim = Sim::new(seed);
    let start = Instant::now();
    let attempts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&attempts);
    let unavailable = tower::service_fn(move |_: http::Request<Full<bytes::Bytes>>| {
        seen.lock().unwrap().push(start.elapsed());
        let answer = http::Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .body(Empty::<bytes::Bytes>::new());
        async move { answer }
    });
    let layer = timebox::client::ClientLayer::new(&sim.config()).entropy(sim.entropy());
    let request = http::Request::get("http://up/")
        .body(Full::default())
        .unwrap();
    let answer = layer.layer(unavailable).oneshot(request).await;
    assert_eq!(answer.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    let attempts = attempts.lock().unwrap().clone();
    attempts
}

/// The sim module's recipe: a part the test builds itself replays with
/// the seed once given the run's source.
#[sim_test]
async fn a_client_layer_given_the_runs_source_replays_its_backoff(_sim: Sim) {
    let first = layer_attempts_at(3).await;
    assert!(first.len() > 1, "the answers are retried: {first:?}");
    assert_eq!(first, layer_attempts_at(3).await);
    assert_ne!(first, layer_attempts_at(4).await);
}

/// The error of one attempt, without retries, to `url`.
async fn sent_once(sim: &Sim, url: &str) -> ClientError {
    sim.client()
        .get(url)
        .retries(0)
        .send()
        .await
        .expect_err("the attempt fails")
}

#[sim_test]
async fn a_dropped_request_fails_to_connect_after_its_latency(sim: Sim) {
    let recorder = Recorder::new();
    let net = sim.net();
    net.host("up", echo(&recorder))
        .latency(MS(40), MS(40))
        .drop_rate(1.0);
    let start = Instant::now();
    let err = sent_once(&sim, "http://up/").await;
    assert!(matches!(err, ClientError::Connect(_)), "{err}");
    assert_eq!(start.elapsed(), MS(40));
    assert_eq!(recorder.count(), 0);
    let events = net.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].outcome, "dropped");
}

#[sim_test]
async fn a_host_the_network_does_not_have_fails_to_connect_at_once(sim: Sim) {
    let start = Instant::now();
    let err = sent_once(&sim, "http://nowhere/").await;
    assert!(matches!(err, ClientError::Connect(_)), "{err}");
    assert_eq!(start.elapsed(), Duration::ZERO);
    let events = sim.net().events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].host, "nowhere");
    assert_eq!(events[0].outcome, "unknown host");
}

#[sim_test]
async fn latency_above_the_attempt_timeout_ends_the_attempt_at_exactly_the_timeout(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", echo(&recorder))
        .latency(SECS(40), SECS(40));
    let start = Instant::now();
    let err = sent_once(&sim, "http://up/").await;
    assert!(matches!(err, ClientError::Timeout), "{err}");
    assert_eq!(start.elapsed(), SECS(30));
}

/// C4: an attempt that timed out is transient, and retried like any other.
#[sim_test]
async fn an_attempt_that_times_out_is_retried(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", echo(&recorder))
        .latency(SECS(40), SECS(40));
    let mut config = sim.config();
    config.http.client.timeout_secs = 1;
    config.http.client.max_retries = 3;
    // No backoff: the attempts follow one another.
    config.http.client.max_backoff_ms = 0;
    let start = Instant::now();
    let err = sim
        .client_with(&config)
        .get("http://up/")
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err}");
    assert_eq!(start.elapsed(), SECS(4), "four attempts of 1 s");
    let started = support::observe::lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("attempt_started"))
        .count();
    assert_eq!(started, 4, "the first and three retries");
}

/// B2: a retry after a connection that could not be made, or an attempt
/// that timed out, costs `transient_cost` (14).
#[sim_test]
async fn a_retry_after_a_failed_connect_or_a_timeout_costs_transient_cost(sim: Sim) {
    let net = sim.net();
    net.host("cut", echo(&Recorder::new())).partition("cut");
    net.host(
        "slow",
        recording(&Recorder::new(), |_| async {
            sleep(SECS(40)).await;
            StatusCode::OK
        }),
    );
    let mut config = sim.config();
    config.http.client.timeout_secs = 1;
    let client = sim.client_with(&config);
    for host in ["cut", "slow"] {
        let _ = client
            .get(format!("http://{host}/"))
            .retries(1)
            .send()
            .await
            .unwrap_err();
        let tokens: Vec<String> = support::observe::lines(&sim.observed())
            .into_iter()
            .filter(|line| line.starts_with(&format!("budget_tokens host={host}:80")))
            .collect();
        assert_eq!(
            tokens[..2],
            [
                format!("budget_tokens host={host}:80 tokens=500"),
                format!("budget_tokens host={host}:80 tokens=486"),
            ],
            "{tokens:?}"
        );
    }
}

#[sim_test]
async fn a_partition_fails_at_once_and_heal_delivers(sim: Sim) {
    let recorder = Recorder::new();
    let net = sim.net();
    net.host("up", echo(&recorder)).partition("up");
    let start = Instant::now();
    let err = sent_once(&sim, "http://up/").await;
    assert!(matches!(err, ClientError::Connect(_)), "{err}");
    assert_eq!(start.elapsed(), Duration::ZERO);
    net.heal("up");
    let response = sim.client().get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(recorder.count(), 1);
}

/// A blackhole loses requests without refusing them: the caller waits
/// until its deadline, as on a network that drops packets silently.
#[sim_test]
async fn a_blackholed_host_is_waited_for_until_the_deadline_and_heal_delivers(sim: Sim) {
    let recorder = Recorder::new();
    let net = sim.net();
    net.host("up", echo(&recorder)).blackhole("up");
    let start = Instant::now();
    let err = Deadline::after(SECS(2))
        .scope(sim.client().get("http://up/").send())
        .await
        .unwrap_err();
    assert!(err.is_deadline_exceeded(), "{err}");
    assert_eq!(start.elapsed(), SECS(2));
    assert_eq!(recorder.count(), 0, "the host never saw it");
    let outcomes: Vec<String> = net.events().into_iter().map(|e| e.outcome).collect();
    assert!(
        !outcomes.is_empty() && outcomes.iter().all(|outcome| outcome == "cancelled"),
        "{outcomes:?}"
    );
    net.heal("up");
    let response = sim.client().get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), 200);
}

/// A simulated host gets the request a real server would: the `Host`
/// and `Content-Length` headers the client's transport writes, and none
/// of the client's extensions.
#[sim_test]
async fn a_simulated_host_gets_the_request_a_real_server_would(sim: Sim) {
    use axum::routing::post;

    async fn seen(request: axum::extract::Request) -> String {
        let header = |name| {
            request
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("-")
                .to_owned()
        };
        let attempt = request
            .extensions()
            .get::<timebox::client::Attempt>()
            .is_some();
        format!(
            "host={} length={} attempt={attempt}",
            header("host"),
            header("content-length")
        )
    }
    sim.net()
        .host("api", axum::Router::new().route("/", post(seen).get(seen)));
    let client = sim.client();
    let said = |response: timebox::client::Response| response.text();
    let posted = client.post("http://api:8080/").body("hello").send().await;
    assert_eq!(
        said(posted.unwrap()).await.unwrap(),
        "host=api:8080 length=5 attempt=false"
    );
    let got = client.get("http://api:80/").send().await;
    assert_eq!(
        said(got.unwrap()).await.unwrap(),
        "host=api length=- attempt=false"
    );
}

/// A host is named without its port, in each of the network's calls: one
/// with a port would match no request. An IPv6 literal is a name without
/// one.
#[sim_test]
async fn a_simulated_host_named_with_a_port_is_refused(sim: Sim) {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    let net = sim.net();
    net.host("[::1]", axum::Router::new())
        .partition("[::1]")
        .heal("[::1]");
    type Call = fn(&timebox::sim::SimNet);
    let calls: [(&str, Call); 4] = [
        ("host", |net| {
            net.host("api:8080", axum::Router::new());
        }),
        ("partition", |net| {
            net.partition("api:8080");
        }),
        ("blackhole", |net| {
            net.blackhole("api:8080");
        }),
        ("heal", |net| {
            net.heal("api:8080");
        }),
    ];
    for (name, call) in calls {
        let panicked = catch_unwind(AssertUnwindSafe(|| call(&net))).expect_err(name);
        let message = panicked.downcast_ref::<String>().map_or("", String::as_str);
        assert!(
            message.contains("write `api`, not `api:8080`"),
            "{name}: {message}"
        );
    }
}

#[sim_test]
async fn a_partition_cuts_a_request_on_its_way(sim: Sim) {
    let recorder = Recorder::new();
    let net = sim.net();
    net.host("up", echo(&recorder)).latency(MS(100), MS(100));
    let client = sim.client();
    let call = tokio::spawn(async move { client.get("http://up/").retries(0).send().await });
    sleep(MS(50)).await;
    net.partition("up");
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, ClientError::Connect(_)), "{err}");
    assert_eq!(recorder.count(), 0, "the host never saw it");
    let outcomes: Vec<_> = net
        .events()
        .into_iter()
        .map(|event| (event.at, event.outcome))
        .collect();
    assert_eq!(outcomes, [(MS(100), "partitioned".to_owned())]);
}

#[sim_test]
async fn a_simulated_host_runs_without_the_callers_deadline(sim: Sim) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let inner = seen.clone();
    sim.net().host(
        "up",
        axum::Router::new().fallback(move || {
            let inner = inner.clone();
            async move {
                *inner.lock().unwrap() = Some(Deadline::current().is_some());
                "ok"
            }
        }),
    );
    Deadline::after(SECS(5))
        .scope(sim.client().get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), Some(false));
}

/// M2 for the response body: a host's streamed body is the host's work,
/// and does not see the deadline of the caller reading it.
#[sim_test]
async fn a_simulated_hosts_body_runs_without_the_callers_deadline(sim: Sim) {
    sim.net().host(
        "up",
        axum::Router::new().fallback(|| async {
            let seen = futures_util::stream::once(async {
                Ok::<_, std::convert::Infallible>(Deadline::current().is_some().to_string())
            });
            axum::body::Body::from_stream(seen)
        }),
    );
    let seen = Deadline::after(SECS(5))
        .scope(async {
            sim.client()
                .get("http://up/")
                .send()
                .await
                .unwrap()
                .text()
                .await
        })
        .await
        .unwrap();
    assert_eq!(seen, "false");
}

// B2, B3: the retry budget, seen through the client.

fn always(status: StatusCode, recorder: &Recorder) -> axum::Router {
    recording(recorder, move |_| async move { status })
}

/// A configuration whose breaker never opens, so the budget alone is seen.
fn budget_only() -> Config {
    let mut config = Config::default();
    config.breaker.minimum_sample_count = u32::MAX;
    config
}

fn tokens(client: &Client, url: &str) -> f64 {
    client
        .budgets()
        .for_uri(&url.parse().unwrap())
        .expect("a budget for the host")
        .tokens()
}

#[sim_test]
async fn on_an_always_failing_host_retries_settle_near_ten_percent(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let client = sim.client_with(&budget_only());
    for _ in 0..100 {
        client.get("http://up/").send().await.unwrap();
    }
    let warm = recorder.count();
    for _ in 0..900 {
        let response = client.get("http://up/").send().await.unwrap();
        assert_eq!(response.status(), 503);
    }
    let attempts = recorder.count() - warm;
    let retries = attempts - 900;
    let share = retries as f64 / 900.0;
    assert!(attempts >= 900);
    assert!((0.08..=0.12).contains(&share), "retry share {share}");
}

/// The log says when a host's budget begins to refuse retries, and when it
/// has refused none for 10 s, once each: not each refusal, nor each retry
/// paid while the bucket hovers near empty on a failing host.
#[sim_test]
async fn a_spell_of_refused_retries_is_said_where_it_begins_and_ends(sim: Sim) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use support::logs::Logs;

    let failing = Arc::new(AtomicBool::new(true));
    let answers = Arc::clone(&failing);
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, move |_| {
            let failing = answers.load(Ordering::SeqCst);
            async move {
                if failing {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let client = sim.client_with(&budget_only());
    let (logs, _guard) = Logs::capture();
    let refusing = "the host's retry budget refuses retries";
    let quiet = "the host's retry budget has refused no retry for 10 s";
    for _ in 0..300 {
        client.get("http://up/").send().await.unwrap();
    }
    logs.one_line_with(refusing, &["host=\"up:80\""]);
    assert!(logs.lines_with(quiet).is_empty());
    // Healed: no retry is asked for, so none is refused; the spell ends at
    // the first call 10 s after the last refusal.
    failing.store(false, Ordering::SeqCst);
    client.get("http://up/").send().await.unwrap();
    assert!(logs.lines_with(quiet).is_empty());
    sleep(SECS(10)).await;
    client.get("http://up/").send().await.unwrap();
    logs.one_line_with(quiet, &["host=\"up:80\""]);
    failing.store(true, Ordering::SeqCst);
    for _ in 0..300 {
        client.get("http://up/").send().await.unwrap();
    }
    assert_eq!(
        logs.lines_with(refusing).len(),
        2,
        "a second spell, said again"
    );
}

#[sim_test]
async fn retries_that_succeed_give_their_tokens_back(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            if n % 2 == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }),
    );
    let client = sim.client_with(&budget_only());
    for _ in 0..200 {
        let response = client.get("http://up/").send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(recorder.count(), 400);
}

#[sim_test]
async fn with_the_budget_disabled_every_request_makes_four_attempts(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let mut config = budget_only();
    config.http.client.retry_budget.enabled = false;
    let client = sim.client_with(&config);
    for n in 1..=50 {
        client.get("http://up/").send().await.unwrap();
        assert_eq!(recorder.count(), 4 * n);
    }
}

#[sim_test]
async fn a_call_cancelled_during_its_backoff_gives_its_tokens_back(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let client = sim.client_with(&budget_only());
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.get("http://up/").send().await }
    });
    // Run until the first attempt failed and the retry was paid for.
    while tokens(&client, "http://up/") > 490.0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(recorder.count(), 1);
    assert!((tokens(&client, "http://up/") - 486.0).abs() < 1e-9);
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(recorder.count(), 1, "the retry was never sent");
    assert!((tokens(&client, "http://up/") - 500.0).abs() < 1e-9);
}

#[sim_test]
async fn a_retry_that_does_not_fit_the_deadline_charges_nothing(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        delayed(&recorder, MS(45), StatusCode::SERVICE_UNAVAILABLE),
    );
    let client = sim.client();
    let start = Instant::now();
    let response = Deadline::after(MS(50))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(start.elapsed(), MS(45));
    assert_eq!(recorder.count(), 1);
    assert!((tokens(&client, "http://up/") - 500.0).abs() < 1e-9);
}

/// C6 at its edge: a retry after a 1 s `Retry-After` needs more than
/// 1 010 ms left; 1 010 ms exactly is not enough.
#[sim_test]
async fn a_retry_needs_more_than_its_wait_and_10_ms(sim: Sim) {
    // A 503 asking for 1 s, then 200s.
    let host = |recorder: &Recorder| {
        recording(recorder, |n| async move {
            if n == 1 {
                (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "1")]).into_response()
            } else {
                StatusCode::OK.into_response()
            }
        })
    };
    let mut config = Config::default();
    // No backoff of its own: the wait is the `Retry-After`.
    config.http.client.max_backoff_ms = 0;
    let client = sim.client_with(&config);

    let recorder = Recorder::new();
    sim.net().host("up", host(&recorder));
    let response = Deadline::after(MS(1010))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503, "no retry with 1 010 ms left");
    assert_eq!(recorder.count(), 1);
    assert!((tokens(&client, "http://up/") - 500.0).abs() < 1e-9);

    let recorder = Recorder::new();
    sim.net().host("up", host(&recorder));
    let start = Instant::now();
    let response = Deadline::after(MS(1011))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "a retry with 1 011 ms left");
    assert_eq!(recorder.count(), 2);
    assert_eq!(start.elapsed(), SECS(1), "after the `Retry-After`");
}

// B6: the breaker, seen through the client.

fn breaker_config(min_samples: u32, slow_secs: u64) -> Config {
    let mut config = Config::default();
    config.breaker.minimum_sample_count = min_samples;
    config.breaker.slow_call_duration_threshold_secs = slow_secs;
    config
}

#[sim_test]
async fn an_always_failing_host_opens_its_breaker(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::INTERNAL_SERVER_ERROR, &recorder));
    let client = sim.client_with(&breaker_config(3, 60));
    for _ in 0..3 {
        let response = client.get("http://up/").retries(0).send().await.unwrap();
        assert_eq!(response.status(), 500);
    }
    let err = client
        .get("http://up/")
        .retries(0)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::CircuitBreakerOpen { .. }),
        "{err}"
    );
    assert_eq!(
        err.into_response().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(recorder.count(), 3);
}

/// `request`, made `long_running` if `long_running`.
fn long_running_if(long_running: bool, request: RequestBuilder) -> RequestBuilder {
    if long_running {
        request.long_running()
    } else {
        request
    }
}

/// Four calls at once to a hanging host, under a breaker that takes calls
/// past 5 s for slow and opens once four calls are all slow, each cut
/// short by a deadline of `secs` and made `long_running` or not; then a
/// fifth, and how many requests the host saw.
async fn four_cut_calls_then_one(
    sim: &Sim,
    secs: u64,
    long_running: bool,
) -> (Result<(), ClientError>, usize) {
    let recorder = Recorder::new();
    sim.net().host("up", hanging(&recorder));
    let client = sim.client_with(&breaker_config(4, 5));
    let call = move |client: Client| async move {
        let request = long_running_if(long_running, client.get("http://up/"));
        Deadline::after(SECS(secs)).scope(request.send()).await
    };
    let calls: Vec<_> = (0..4).map(|_| tokio::spawn(call(client.clone()))).collect();
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        assert!(err.is_deadline_exceeded(), "{err}");
    }
    (call(client).await.map(drop), recorder.count())
}

/// Asserts that the fifth call ended at its deadline, the breaker closed,
/// after the host saw all five.
fn the_breaker_stayed_closed((fifth, sent): (Result<(), ClientError>, usize)) {
    let err = fifth.unwrap_err();
    assert!(
        err.is_deadline_exceeded(),
        "the breaker stayed closed: {err}"
    );
    assert_eq!(sent, 5);
}

#[sim_test]
async fn calls_cut_short_by_our_own_deadline_do_not_blame_the_host(sim: Sim) {
    the_breaker_stayed_closed(four_cut_calls_then_one(&sim, 1, false).await);
}

#[sim_test]
async fn calls_cut_short_after_the_slow_threshold_count_as_slow(sim: Sim) {
    the_breaker_opened(four_cut_calls_then_one(&sim, 10, false).await, 4);
}

/// Asserts that `call` was refused by an open breaker, and that the host
/// saw the `sent` calls before it.
fn the_breaker_opened((call, seen): (Result<(), ClientError>, usize), sent: usize) {
    let err = call.unwrap_err();
    assert!(
        matches!(err, ClientError::CircuitBreakerOpen { .. }),
        "{err}"
    );
    assert_eq!(seen, sent);
}

/// Three calls at once to a host that answers `status` after 10 s, each
/// made `long_running` or not, under a breaker that takes calls past 5 s
/// for slow and opens once three calls are all slow (or all failed); then
/// a fourth call, and how many requests the host saw.
async fn three_slow_answers_then_one(
    sim: &Sim,
    status: StatusCode,
    long_running: bool,
) -> (Result<(), ClientError>, usize) {
    let recorder = Recorder::new();
    sim.net().host("up", delayed(&recorder, SECS(10), status));
    let client = sim.client_with(&breaker_config(3, 5));
    let call = || long_running_if(long_running, client.get("http://up/").retries(0)).send();
    for answer in futures_util::future::join_all((0..3).map(|_| call())).await {
        assert_eq!(answer.unwrap().status(), status);
    }
    (call().await.map(drop), recorder.count())
}

#[sim_test]
async fn slow_answers_open_the_breaker(sim: Sim) {
    the_breaker_opened(
        three_slow_answers_then_one(&sim, StatusCode::OK, false).await,
        3,
    );
}

#[sim_test]
async fn a_long_running_calls_time_is_not_held_against_its_host(sim: Sim) {
    let (fourth, sent) = three_slow_answers_then_one(&sim, StatusCode::OK, true).await;
    fourth.expect("the breaker stayed closed");
    assert_eq!(sent, 4);
}

#[sim_test]
async fn a_long_running_calls_failures_still_open_the_breaker(sim: Sim) {
    let calls = three_slow_answers_then_one(&sim, StatusCode::INTERNAL_SERVER_ERROR, true).await;
    the_breaker_opened(calls, 3);
}

#[sim_test]
async fn a_long_running_call_cut_short_after_the_slow_threshold_counts_for_nothing(sim: Sim) {
    the_breaker_stayed_closed(four_cut_calls_then_one(&sim, 10, true).await);
}

/// Three calls at once to a hanging host, each cut by an attempt timeout
/// of 1 s, under a breaker that opens once three calls all failed: plain,
/// they open it; long-running, they count for nothing.
#[sim_test]
async fn a_long_running_call_cut_by_its_attempt_timeout_counts_for_nothing(sim: Sim) {
    for long_running in [false, true] {
        let recorder = Recorder::new();
        sim.net().host("up", hanging(&recorder));
        let client = sim.client_with(&breaker_config(3, 60));
        let call = || {
            let request = client.get("http://up/").retries(0).attempt_timeout(SECS(1));
            long_running_if(long_running, request).send()
        };
        for cut in futures_util::future::join_all((0..3).map(|_| call())).await {
            assert!(matches!(cut, Err(ClientError::Timeout)), "{cut:?}");
        }
        let fourth = call().await.map(drop);
        if long_running {
            assert!(matches!(fourth, Err(ClientError::Timeout)), "{fourth:?}");
            assert_eq!(recorder.count(), 4);
        } else {
            the_breaker_opened((fourth, recorder.count()), 3);
        }
    }
}

// The retry-amplification experiment: five layers that retry.

/// Leaf attempts per client request in steady state, after `warm_up`
/// requests drained the budgets.
async fn amplification(sim: &Sim, config: &Config, warm_up: u64, measured: u64) -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use support::chain::{leaf_service, middle, MIDDLE_LAYERS};

    let hits = Arc::new(AtomicU64::new(0));
    let net = sim.net();
    net.host("leaf", leaf_service(config, hits.clone()));
    for layer in 1..=MIDDLE_LAYERS {
        let next = if layer == MIDDLE_LAYERS {
            "http://leaf/".to_owned()
        } else {
            format!("http://s{}/", layer + 1)
        };
        net.host(
            format!("s{layer}"),
            middle(config, sim.client_with(config), next),
        );
    }
    let client = sim.client_with(config);
    for _ in 0..warm_up {
        client.get("http://s1/").send().await.unwrap();
    }
    let before = hits.load(Ordering::Relaxed);
    for _ in 0..measured {
        let response = client.get("http://s1/").send().await.unwrap();
        assert_eq!(response.status(), 503);
    }
    let per_request = (hits.load(Ordering::Relaxed) - before) as f64 / measured as f64;
    println!("leaf attempts per client request: {per_request:.3}");
    per_request
}

#[sim_test(seed = 1)]
async fn without_a_budget_three_attempts_a_layer_hit_the_leaf_243_times(sim: Sim) {
    let per_request = amplification(&sim, &support::chain::without_budget(), 2, 5).await;
    assert!(per_request >= 200.0, "{per_request}");
    assert!((per_request - 243.0).abs() < f64::EPSILON, "{per_request}");
}

#[sim_test(seed = 1)]
async fn the_retry_budget_keeps_leaf_load_under_1_7_attempts_per_request(sim: Sim) {
    let per_request = amplification(&sim, &support::chain::with_defaults(), 300, 1000).await;
    assert!(per_request <= 1.7, "{per_request}");
    assert!(per_request >= 1.0, "{per_request}");
}

// C7, C6: redirects are not retries; an open breaker ends retrying.

#[sim_test]
async fn following_a_redirect_does_not_use_up_a_retry(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            if n == 1 {
                axum::response::Redirect::to("/target").into_response()
            } else {
                StatusCode::SERVICE_UNAVAILABLE.into_response()
            }
        }),
    );
    let response = sim
        .client_with(&budget_only())
        .get("http://up/start")
        .retries(1)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let paths: Vec<String> = recorder.hits().into_iter().map(|hit| hit.path).collect();
    assert_eq!(paths, ["/start", "/target", "/target"]);
}

/// C4, C7: the GET a 303 turns a POST into is a bodiless GET, and retries
/// as any GET does.
#[sim_test]
async fn the_get_a_post_is_redirected_to_retries_as_any_get(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            match n {
                1 => axum::response::Redirect::to("/orders/7").into_response(),
                2 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                _ => StatusCode::OK.into_response(),
            }
        }),
    );
    let response = sim
        .client_with(&budget_only())
        .post("http://up/orders")
        .body("an order")
        .retries(1)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let hits: Vec<(String, String)> = recorder
        .hits()
        .into_iter()
        .map(|hit| (hit.method, hit.path))
        .collect();
    let hit = |method: &str, path: &str| (method.to_owned(), path.to_owned());
    assert_eq!(
        hits,
        [
            hit("POST", "/orders"),
            hit("GET", "/orders/7"),
            hit("GET", "/orders/7")
        ]
    );
}

/// A host that answers 503 once, then redirects to `http://b/`.
fn unavailable_then_to_b() -> axum::Router {
    recording(&Recorder::new(), |n| async move {
        match n {
            1 => StatusCode::SERVICE_UNAVAILABLE.into_response(),
            _ => axum::response::Redirect::temporary("http://b/").into_response(),
        }
    })
}

/// B2, B4: a retry that failed keeps what it cost, also when a later retry,
/// to a host past `max_hosts` (no bucket), succeeds.
#[sim_test]
async fn a_failed_retry_keeps_its_cost_when_a_later_one_without_a_bucket_succeeds(sim: Sim) {
    sim.net().host("a", unavailable_then_to_b());
    sim.net().host(
        "b",
        recording(&Recorder::new(), |n| async move {
            match n {
                1 => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::OK,
            }
        }),
    );
    let mut config = budget_only();
    config.http.client.retry_budget.max_hosts = 1;
    let client = sim.client_with(&config);
    let before = tokens(&client, "http://a/");
    let response = client.get("http://a/").retries(2).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(client
        .budgets()
        .for_uri(&"http://b/".parse().unwrap())
        .is_none());
    // The first retry's transient cost (14) stays spent.
    assert!((tokens(&client, "http://a/") - (before - 14.0)).abs() < 1e-9);
}

/// O1: the tokens a retry gets back are told as its own host's, not as
/// those of the host a redirect led to.
#[sim_test]
async fn a_refund_after_a_redirect_is_told_as_the_retried_hosts(sim: Sim) {
    use timebox::observe::{Event, Recording};

    sim.net().host("a", unavailable_then_to_b());
    sim.net().host("b", echo(&Recorder::new()));
    let events = Recording::new();
    let client = sim.client_with(&budget_only().observed_by(events.clone()));
    let response = client.get("http://a/").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let last = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::BudgetTokens { host, tokens } => Some((host.to_string(), tokens)),
            _ => None,
        })
        .last()
        .expect("a budget event");
    assert_eq!(last, ("a:80".to_owned(), tokens(&client, "http://a/")));
}

#[sim_test]
async fn a_retry_an_open_breaker_would_refuse_returns_the_last_response(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let client = sim.client_with(&breaker_config(2, 60));
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(recorder.count(), 2);
}

#[sim_test]
async fn a_retry_the_breaker_refuses_after_its_wait_is_told_as_skipped(sim: Sim) {
    use timebox::observe::{Event, Recording, SkipReason};

    let recorder = Recorder::new();
    // Each 503 asks for a second's wait, in which the breaker opens.
    sim.net().host(
        "up",
        recording(&recorder, |_| async {
            (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "1")])
        }),
    );
    let recording_events = Recording::new();
    let (logs, _capture) = support::logs::Logs::capture();
    let client = sim.client_with(&breaker_config(2, 60).observed_by(recording_events.clone()));
    let waiting = tokio::spawn({
        let client = client.clone();
        async move { client.get("http://up/").retries(1).send().await }
    });
    sleep(MS(100)).await;
    assert_eq!(recorder.count(), 1);
    // A second failure opens the breaker while the first call waits.
    let other = client.get("http://up/").retries(0).send().await.unwrap();
    assert_eq!(other.status(), 503);

    let err = waiting.await.unwrap().expect_err("the retry is refused");
    assert!(
        matches!(err, ClientError::CircuitBreakerOpen { .. }),
        "{err:?}"
    );
    assert_eq!(recorder.count(), 2);
    let skipped = recording_events
        .events()
        .into_iter()
        .filter(|event| {
            matches!(
                event,
                Event::RetrySkipped {
                    reason: SkipReason::BreakerOpen,
                    ..
                }
            )
        })
        .count();
    assert_eq!(skipped, 1);
    logs.one_line_with(
        "no retry: the host's circuit breaker refused it",
        &["host=\"up:80\"", "attempt=2"],
    );
}

#[sim_test]
async fn a_client_built_with_a_transport_sends_through_it(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("up", echo(&recorder));
    let client = Client::builder()
        .transport(std::sync::Arc::new(sim.net()))
        .entropy(sim.entropy())
        .build();
    let response = client.get("http://up/built").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(recorder.hits()[0].path, "/built");
}

/// A transport whose every answer's body is one chunk saying whether a
/// deadline was current when the body was read.
#[derive(Debug)]
struct DeadlineEchoingBody;

impl timebox::client::Transport for DeadlineEchoingBody {
    fn send(&self, _request: http::Request<bytes::Bytes>) -> timebox::client::TransportFuture {
        let body = futures_util::stream::poll_fn(|_| {
            let seen = match Deadline::current() {
                Some(deadline) => format!("{} ms", deadline.remaining().as_millis()),
                None => "none".to_owned(),
            };
            std::task::Poll::Ready(Some(Ok::<_, std::convert::Infallible>(bytes::Bytes::from(
                seen,
            ))))
        })
        .take(1);
        let response = http::Response::new(timebox::client::ResponseBody::from_stream(body));
        Box::pin(async move { Ok(response) })
    }
}

/// A body is read with the call's deadline current (here its own 1 s
/// `timeout`, shorter than the caller's 5 s), whole or chunk by chunk.
#[tokio::test(start_paused = true)]
async fn a_body_is_read_with_the_calls_deadline_current_by_either_reader() {
    let client = Client::builder()
        .transport(std::sync::Arc::new(DeadlineEchoingBody))
        .build();
    let whole = Deadline::after(SECS(5))
        .scope(async {
            let response = client.get("http://up/").timeout(SECS(1)).send().await?;
            response.text().await
        })
        .await
        .unwrap();
    assert_eq!(whole, "1000 ms");
    let chunks: Vec<_> = Deadline::after(SECS(5))
        .scope(async {
            let response = client
                .get("http://up/")
                .timeout(SECS(1))
                .send()
                .await
                .unwrap();
            response.bytes_stream().collect().await
        })
        .await;
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(chunks[0].as_ref().unwrap(), "1000 ms");
}

// §11 and §15: B2 once per host, C7 one timeout per chain, B7, and the
// decisions said in the logs.

#[sim_test]
async fn a_redirect_chain_that_revisits_hosts_refills_each_bucket_once(sim: Sim) {
    let redirect = |to: &'static str| axum::response::Redirect::temporary(to).into_response();
    sim.net().host(
        "a",
        axum::Router::new()
            .route(
                "/1",
                axum::routing::get(move || async move { redirect("http://b/2") }),
            )
            .route(
                "/3",
                axum::routing::get(move || async move { redirect("http://b/4") }),
            ),
    );
    sim.net().host(
        "b",
        axum::Router::new()
            .route(
                "/2",
                axum::routing::get(move || async move { redirect("http://a/3") }),
            )
            .route("/4", axum::routing::get(|| async { "end" })),
    );
    let client = sim.client_with(&budget_only());
    // Spend some tokens at both hosts, so that a refill shows.
    for url in ["http://a/", "http://b/"] {
        let budget = client.budgets().for_uri(&url.parse().unwrap()).unwrap();
        for _ in 0..3 {
            assert!(budget.try_withdraw(timebox::retry::RetryKind::Transient));
        }
    }
    let before = (tokens(&client, "http://a/"), tokens(&client, "http://b/"));
    let response = client.get("http://a/1").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let refill = |url, before: f64| tokens(&client, url) - before;
    // retry_ratio × transient_cost = 0.1 × 14, once per host.
    assert!((refill("http://a/", before.0) - 1.4).abs() < 1e-9);
    assert!((refill("http://b/", before.1) - 1.4).abs() < 1e-9);
}

#[sim_test]
async fn one_attempt_timeout_covers_the_whole_redirect_chain(sim: Sim) {
    sim.net().host(
        "up",
        axum::Router::new()
            .route(
                "/first",
                axum::routing::get(|| async {
                    sleep(MS(700)).await;
                    axum::response::Redirect::temporary("/second")
                }),
            )
            .route(
                "/second",
                axum::routing::get(|| async {
                    sleep(MS(700)).await;
                    "too late"
                }),
            ),
    );
    let mut config = Config::default();
    config.http.client.timeout_secs = 1;
    let start = Instant::now();
    let err = sim
        .client_with(&config)
        .get("http://up/first")
        .retries(0)
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err}");
    assert_eq!(start.elapsed(), SECS(1));
}

/// `up` answers `GET /first` with `answer` after 1 s, as an attempt timeout
/// of 1 s runs out; the result of one such attempt, and the outcomes told.
async fn one_attempt_answered_as_it_times_out<R>(
    sim: &Sim,
    answer: fn() -> R,
) -> (
    Result<timebox::client::Response, ClientError>,
    Vec<timebox::observe::CallOutcome>,
)
where
    R: IntoResponse + Send + 'static,
{
    sim.net().host(
        "up",
        axum::Router::new().route(
            "/first",
            axum::routing::get(move || async move {
                sleep(SECS(1)).await;
                answer()
            }),
        ),
    );
    let mut config = Config::default();
    config.http.client.timeout_secs = 1;
    let result = sim
        .client_with(&config)
        .get("http://up/first")
        .retries(0)
        .send()
        .await;
    let outcomes = sim
        .observed()
        .into_iter()
        .filter_map(|event| match event {
            timebox::observe::Event::AttemptFinished { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
    (result, outcomes)
}

#[sim_test]
async fn a_redirect_that_comes_as_the_attempt_times_out_starts_no_hop(sim: Sim) {
    let recorder = Recorder::new();
    sim.net().host("next", echo(&recorder));
    let (result, outcomes) = one_attempt_answered_as_it_times_out(&sim, || {
        axum::response::Redirect::temporary("http://next/")
    })
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err}");
    assert_eq!(recorder.count(), 0, "the next host heard nothing");
    // Told as the timeout it was, not as the redirect's 307.
    assert_eq!(outcomes, [timebox::observe::CallOutcome::Timeout]);
}

#[sim_test]
async fn a_redirect_that_starts_no_hop_is_an_answer_even_as_the_attempt_times_out(sim: Sim) {
    // No `Location`: nothing to follow.
    let (result, outcomes) = one_attempt_answered_as_it_times_out(&sim, || StatusCode::FOUND).await;
    assert_eq!(result.unwrap().status(), StatusCode::FOUND);
    assert_eq!(outcomes, [timebox::observe::CallOutcome::Status(302)]);
}

#[sim_test]
async fn a_location_no_request_can_be_sent_to_is_the_answer(sim: Sim) {
    sim.net().host(
        "up",
        axum::Router::new().route(
            "/",
            // The URL standard takes `{` in a host; an HTTP request's URI
            // does not.
            axum::routing::get(|| async { (StatusCode::FOUND, [("location", "http://a{b/")]) }),
        ),
    );
    let response = sim.client().get("http://up/").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
}

#[sim_test]
async fn with_the_breaker_disabled_a_hundred_calls_to_an_always_500_host_all_reach_it(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::INTERNAL_SERVER_ERROR, &recorder));
    let mut config = sim.config();
    config.breaker.enabled = false;
    let client = sim.client_with(&config);
    for _ in 0..100 {
        let response = client.get("http://up/").retries(0).send().await.unwrap();
        assert_eq!(response.status(), 500);
    }
    assert_eq!(recorder.count(), 100);
    // No breaker state is kept: nothing is counted, nothing moves.
    let told = support::observe::lines(&sim.observed());
    assert!(
        told.iter().all(|line| !line.starts_with("breaker_")),
        "{told:?}"
    );
    assert!(
        told.iter().any(|line| line.starts_with("attempt_finished")),
        "{told:?}"
    );
}

#[sim_test]
async fn a_breaker_says_when_it_opens_why_and_for_how_long_and_when_it_closes(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let recorder = Recorder::new();
    // Three failed requests (the tenth attempt opens the breaker, which
    // ends the third request's retries), then a healthy host.
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            if n <= 10 {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::OK
            }
        }),
    );
    let client = sim.client_with(&Config::default());
    for _ in 0..3 {
        let _ = client.get("http://up/").send().await;
    }
    let opened = logs.lines_with("circuit breaker opened");
    assert_eq!(opened.len(), 1, "{opened:?}");
    for field in [
        "WARN",
        "host=\"up:80\"",
        "failure_ratio=1.0",
        "slow_ratio=0.0",
        "samples=10",
        "open_secs=60",
    ] {
        assert!(has_field(&opened[0], field), "{field} in {}", opened[0]);
    }
    sleep(SECS(60)).await;
    for _ in 0..3 {
        let response = client.get("http://up/").send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let closed = logs.lines_with("circuit breaker closed");
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert!(closed[0].contains("INFO") && closed[0].contains("host=\"up:80\""));
}

#[sim_test]
async fn each_retry_and_each_retry_refused_by_the_deadline_is_logged(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let client = sim.client_with(&budget_only());
    let response = Deadline::after(MS(150))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let retries = logs.lines_with("retrying");
    assert_eq!(retries.len(), recorder.count() - 1, "{retries:?}");
    for field in [
        "DEBUG",
        "host=\"up:80\"",
        "attempt=2",
        "reason=status 503",
        "wait_ms=",
    ] {
        assert!(has_field(&retries[0], field), "{field} in {}", retries[0]);
    }
    let refused = logs.lines_with("no retry: the wait does not fit the time left");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("left_ms="), "{}", refused[0]);
}

#[sim_test]
async fn a_retry_the_budget_refuses_is_logged(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::SERVICE_UNAVAILABLE, &recorder));
    let mut config = budget_only();
    // Room for one retry: the second finds the bucket short.
    config.http.client.retry_budget.capacity = 20;
    let client = sim.client_with(&config);
    client.get("http://up/").send().await.unwrap();
    assert_eq!(recorder.count(), 2);
    let refused = logs.lines_with("no retry: the host's retry budget cannot pay for it");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("tokens="), "{}", refused[0]);
}

#[sim_test]
async fn simnet_logs_an_attempt_the_caller_gave_up_on_as_cancelled(sim: Sim) {
    let recorder = Recorder::new();
    sim.net()
        .host("up", echo(&recorder))
        .latency(MS(500), MS(500));
    let err = Deadline::after(MS(100))
        .scope(sim.client().get("http://up/slow").send())
        .await
        .unwrap_err();
    assert!(err.is_deadline_exceeded(), "{err}");
    let events = sim.net().events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].outcome, "cancelled");
    assert_eq!(events[0].at, MS(100));
    assert_eq!(events[0].path, "/slow");
    assert_eq!(recorder.count(), 0);
}

#[sim_test]
async fn an_open_breakers_error_carries_the_breakers_answer_as_its_source(sim: Sim) {
    use std::error::Error as _;

    let recorder = Recorder::new();
    sim.net()
        .host("up", always(StatusCode::INTERNAL_SERVER_ERROR, &recorder));
    let client = sim.client_with(&breaker_config(3, 60));
    for _ in 0..3 {
        client.get("http://up/").retries(0).send().await.unwrap();
    }
    let err = client.get("http://up/").send().await.unwrap_err();
    let open = err
        .source()
        .and_then(|source| source.downcast_ref::<timebox::breaker::Open>())
        .expect("the breaker's Open as the source");
    assert_eq!(open.retry_in(), Some(SECS(60)));
}
