//! The client's attempt spans (DESIGN O4), exported by
//! `tracing-opentelemetry` into the OpenTelemetry SDK's in-memory exporter.

mod support;

use http::StatusCode;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use timebox::deadline::Deadline;
use timebox::sim::Sim;
use timebox::sim_test;
use tracing_subscriber::layer::SubscriberExt as _;

use support::time::{MS, SECS};
use support::upstream::{recording, Recorder};

/// The spans the client's attempts made while `body` ran, in the order they
/// ended.
async fn attempt_spans<F: std::future::Future<Output = ()>>(body: F) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("timebox-test")));
    {
        let _default = support::logs::scoped(subscriber);
        body.await;
    }
    provider.force_flush().expect("the spans are exported");
    exporter
        .get_finished_spans()
        .expect("the exported spans")
        .into_iter()
        .filter(|span| attribute(span, "timebox.attempt.kind").is_some())
        .collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|value| value.as_str().into_owned())
}

#[sim_test]
async fn each_attempt_is_a_client_span_and_a_retry_counts_its_resends(sim: Sim) {
    // `n` counts the host's requests, this one included.
    sim.net().host(
        "up",
        recording(&Recorder::new(), |n| async move {
            if n == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }),
    );
    let client = sim.client();
    let spans = attempt_spans(async {
        let response = client.get("http://up/").send().await.unwrap();
        assert_eq!(response.status(), 200);
    })
    .await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (first, retry) = (&spans[0], &spans[1]);
    for span in &spans {
        assert_eq!(span.name, "GET");
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(text(span, "http.request.method").as_deref(), Some("GET"));
        assert_eq!(text(span, "server.address").as_deref(), Some("up"));
        // The scheme's port, though the URL names none (OpenTelemetry's
        // HTTP client spans always carry it).
        assert_eq!(text(span, "server.port").as_deref(), Some("80"));
    }
    assert_eq!(
        text(first, "timebox.attempt.kind").as_deref(),
        Some("first")
    );
    assert_eq!(attribute(first, "http.request.resend_count"), None);
    assert_eq!(
        text(first, "http.response.status_code").as_deref(),
        Some("503")
    );
    assert_eq!(text(first, "error.type").as_deref(), Some("503"));
    assert!(matches!(first.status, Status::Error { .. }), "{first:#?}");
    assert_eq!(
        text(retry, "timebox.attempt.kind").as_deref(),
        Some("retry")
    );
    assert_eq!(
        text(retry, "http.request.resend_count").as_deref(),
        Some("1")
    );
    assert_eq!(
        text(retry, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attribute(retry, "error.type"), None);
    assert_eq!(retry.status, Status::Unset);
}

#[sim_test]
async fn a_4xx_answer_is_an_error_of_a_client_span(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| async { StatusCode::NOT_FOUND }),
    );
    let client = sim.client();
    let spans = attempt_spans(async {
        let response = client.get("http://up/missing").send().await.unwrap();
        assert_eq!(response.status(), 404);
    })
    .await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(text(&spans[0], "error.type").as_deref(), Some("404"));
    assert!(matches!(spans[0].status, Status::Error { .. }));
}

/// A redirect past the hop limit fails the call, though its attempt got
/// an answer: that attempt's span is an error (OpenTelemetry's HTTP
/// conventions), keeping the status it got.
#[sim_test]
async fn the_answer_past_the_redirect_limit_ends_an_error_span(sim: Sim) {
    sim.net().host(
        "up",
        axum::Router::new().route(
            "/",
            axum::routing::get(|| async { (StatusCode::FOUND, [(http::header::LOCATION, "/")]) }),
        ),
    );
    let client = sim.client();
    let spans = attempt_spans(async {
        let err = client.get("http://up/").send().await.unwrap_err();
        assert!(
            matches!(err, timebox::client::ClientError::TooManyRedirects),
            "{err:?}"
        );
    })
    .await;
    let (last, hops) = spans.split_last().expect("spans");
    assert_eq!(text(last, "error.type").as_deref(), Some("_OTHER"));
    assert!(matches!(last.status, Status::Error { .. }), "{last:#?}");
    assert_eq!(
        text(last, "http.response.status_code").as_deref(),
        Some("302")
    );
    for hop in hops {
        assert_eq!(text(hop, "error.type"), None, "{hop:#?}");
    }
}

/// A method the HTTP RFCs do not define is `_OTHER`, kept as sent in
/// `http.request.method_original`, in a span named `HTTP`
/// (OpenTelemetry's HTTP conventions); a known one is itself.
#[sim_test]
async fn a_method_of_the_callers_own_is_other_in_a_span_named_http(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| async { StatusCode::OK }),
    );
    let client = sim.client();
    let purge = http::Method::from_bytes(b"PURGE").unwrap();
    let spans = attempt_spans(async {
        for method in [purge.clone(), http::Method::PATCH] {
            let response = client.request(method, "http://up/").send().await.unwrap();
            assert_eq!(response.status(), 200);
        }
    })
    .await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (own, known) = (&spans[0], &spans[1]);
    assert_eq!(own.name, "HTTP");
    assert_eq!(text(own, "http.request.method").as_deref(), Some("_OTHER"));
    assert_eq!(
        text(own, "http.request.method_original").as_deref(),
        Some("PURGE")
    );
    assert_eq!(known.name, "PATCH");
    assert_eq!(text(known, "http.request.method").as_deref(), Some("PATCH"));
    assert_eq!(attribute(known, "http.request.method_original"), None);
}

/// A client that hedges every first attempt still under way at 20 ms.
fn hedging_at_20ms() -> timebox::config::Config {
    let mut config = timebox::config::Config::default();
    config.http.client.hedge.enabled = true;
    config.http.client.hedge.delay_ms = Some(20);
    config.http.client.hedge.max_extra_load = 1.0;
    config
}

#[sim_test]
async fn the_loser_of_a_hedge_race_is_no_error(sim: Sim) {
    // The first request is slow: the hedge, sent at 20 ms, wins.
    sim.net().host(
        "up",
        recording(&Recorder::new(), |n| async move {
            if n == 1 {
                tokio::time::sleep(SECS(1)).await;
            }
            StatusCode::OK
        }),
    );
    let client = sim.client_with(&hedging_at_20ms());
    let spans = attempt_spans(async {
        let response = client.get("http://up/").send().await.unwrap();
        assert_eq!(response.status(), 200);
    })
    .await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let loser = spans
        .iter()
        .find(|span| text(span, "timebox.attempt.kind").as_deref() == Some("first"))
        .expect("the first attempt's span");
    assert_eq!(text(loser, "error.type").as_deref(), Some("_OTHER"));
    assert_eq!(loser.status, Status::Unset, "{loser:#?}");
}

/// A hedge race the deadline ends has no loser: both attempts say
/// `deadline_exceeded`.
#[sim_test]
async fn both_attempts_of_a_hedge_race_the_deadline_ends_say_deadline_exceeded(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let client = sim.client_with(&hedging_at_20ms());
    let spans = attempt_spans(async {
        let err = Deadline::after(MS(200))
            .scope(client.get("http://up/").send())
            .await
            .unwrap_err();
        assert!(err.is_deadline_exceeded(), "{err}");
    })
    .await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    for span in &spans {
        assert_eq!(
            text(span, "error.type").as_deref(),
            Some("deadline_exceeded"),
            "{span:#?}"
        );
        assert!(matches!(span.status, Status::Error { .. }), "{span:#?}");
    }
}

#[sim_test]
async fn an_attempt_whose_retry_the_budget_refused_says_retry_budget_exhausted(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| async {
            StatusCode::SERVICE_UNAVAILABLE
        }),
    );
    let mut config = timebox::config::Config::default();
    config.http.client.retry_budget.capacity = 10;
    let client = sim.client_with(&config);
    let spans = attempt_spans(async {
        client.get("http://up/").send().await.unwrap();
    })
    .await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(
        text(&spans[0], "error.type").as_deref(),
        Some("retry_budget_exhausted")
    );
}

/// O4: a deadline outside the call that passes first (a route's gate, a
/// `bounded` around the send) drops the call with its attempt under way;
/// the attempt's span still says why it ended.
#[sim_test]
async fn an_attempt_dropped_by_a_deadline_outside_the_call_says_deadline_exceeded(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let client = sim.client();
    let spans = attempt_spans(async {
        let outer = Deadline::after(SECS(1))
            .scope(timebox::deadline::bounded(client.get("http://up/").send()))
            .await;
        assert!(outer.is_err(), "the outer gate ended it");
    })
    .await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(
        text(&spans[0], "error.type").as_deref(),
        Some("deadline_exceeded")
    );
}

#[sim_test]
async fn an_attempt_cut_by_the_deadline_says_deadline_exceeded(sim: Sim) {
    sim.net().host(
        "up",
        recording(&Recorder::new(), |_| std::future::pending::<StatusCode>()),
    );
    let client = sim.client();
    let spans = attempt_spans(async {
        let err = Deadline::after(SECS(1))
            .scope(client.get("http://up/").send())
            .await
            .unwrap_err();
        assert!(err.is_deadline_exceeded(), "{err}");
    })
    .await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(
        text(&spans[0], "error.type").as_deref(),
        Some("deadline_exceeded")
    );
}

/// The attempt's own timeout, a connection that could not be made, and a
/// breaker that refused the attempt each have their own `error.type`.
#[sim_test]
async fn a_timeout_a_failed_connect_and_an_open_breaker_each_say_which(sim: Sim) {
    let net = sim.net();
    net.host(
        "slow",
        recording(&Recorder::new(), |_| async {
            tokio::time::sleep(SECS(40)).await;
            StatusCode::OK
        }),
    );
    net.host(
        "cut",
        recording(&Recorder::new(), |_| async { StatusCode::OK }),
    )
    .partition("cut");
    net.host(
        "down",
        recording(&Recorder::new(), |_| async {
            StatusCode::INTERNAL_SERVER_ERROR
        }),
    );
    let mut config = sim.config();
    config.http.client.timeout_secs = 1;
    // The first failed call opens the breaker of `down`.
    config.breaker.minimum_sample_count = 1;
    let client = sim.client_with(&config);
    let error_type = |url: &'static str| {
        let client = client.clone();
        async move {
            let spans = attempt_spans(async {
                let _ = client.get(url).retries(0).send().await;
            })
            .await;
            assert_eq!(spans.len(), 1, "{url}: {spans:#?}");
            assert!(matches!(spans[0].status, Status::Error { .. }), "{url}");
            text(&spans[0], "error.type")
        }
    };
    assert_eq!(error_type("http://slow/").await.as_deref(), Some("timeout"));
    assert_eq!(error_type("http://cut/").await.as_deref(), Some("connect"));
    assert_eq!(error_type("http://down/").await.as_deref(), Some("500"));
    assert_eq!(
        error_type("http://down/").await.as_deref(),
        Some("circuit_open")
    );
}
