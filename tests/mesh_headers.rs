//! The deadline headers of a mesh (DESIGN I5): which inbound formats a
//! server trusts, and which a client writes on every attempt.

mod support;

use std::time::Duration;

use http::StatusCode;
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::sim::Sim;
use timebox::{get, routes, sim_test};
use tokio::time::{sleep, Instant};

use support::http::{request, send};
use support::time::{MS, SECS};
use support::upstream::{recording, Recorder};

#[get("/slow")]
async fn slow() -> &'static str {
    sleep(SECS(10)).await;
    "finished"
}

/// A 2 s global deadline that trusts `formats`.
fn trusting(formats: &[&str]) -> Config {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = Some(2000);
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.deadline_headers = formats.iter().map(|&f| f.to_owned()).collect();
    config.validate().expect("a valid config");
    config
}

/// When `GET /slow` with `headers` is answered, and with what.
async fn answered_after(
    config: &Config,
    headers: &[(&'static str, &str)],
) -> (Duration, StatusCode) {
    let app = routes![slow].into_router(config);
    let mut req = request("GET", "/slow");
    for (name, value) in headers {
        req.headers_mut().append(*name, value.parse().unwrap());
    }
    let start = Instant::now();
    let response = send(&app, req).await;
    (start.elapsed(), response.status())
}

#[tokio::test(start_paused = true)]
async fn each_inbound_format_shortens_the_route_deadline_and_never_lengthens_it() {
    for (format, short, long) in [
        ("x-timebox-deadline-ms", "300", "5000"),
        ("grpc-timeout", "300m", "5S"),
        ("x-envoy-expected-rq-timeout-ms", "300", "5000"),
        ("connect-timeout-ms", "300", "5000"),
    ] {
        let config = trusting(&[format]);
        let answer = answered_after(&config, &[(format, short)]).await;
        assert_eq!(
            answer,
            (MS(300), StatusCode::SERVICE_UNAVAILABLE),
            "{format}: {short}"
        );
        let answer = answered_after(&config, &[(format, long)]).await;
        assert_eq!(
            answer,
            (SECS(2), StatusCode::SERVICE_UNAVAILABLE),
            "{format}: {long}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_format_not_listed_is_not_trusted() {
    let config = trusting(&["x-timebox-deadline-ms"]);
    let answer = answered_after(&config, &[("grpc-timeout", "300m")]).await;
    assert_eq!(answer.0, SECS(2));
}

#[tokio::test(start_paused = true)]
async fn the_earliest_trusted_value_wins() {
    let config = trusting(&["grpc-timeout", "x-envoy-expected-rq-timeout-ms"]);
    // Whichever of the formats comes first in the list.
    for (grpc, envoy) in [("900m", "400"), ("400m", "900")] {
        let headers = [
            ("grpc-timeout", grpc),
            ("x-envoy-expected-rq-timeout-ms", envoy),
        ];
        let answer = answered_after(&config, &headers).await;
        assert_eq!(answer.0, MS(400), "{headers:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_value_that_does_not_parse_or_comes_twice_is_no_value() {
    let config = trusting(&["grpc-timeout", "connect-timeout-ms"]);
    for headers in [
        &[("grpc-timeout", "300")][..],
        &[("grpc-timeout", "300m"), ("grpc-timeout", "300m")][..],
        // Eleven digits, one more than Connect allows, for 300 ms.
        &[("connect-timeout-ms", "00000000300")][..],
    ] {
        assert_eq!(
            answered_after(&config, headers).await.0,
            SECS(2),
            "{headers:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn nothing_is_trusted_unless_headers_are_accepted() {
    let mut config = trusting(&["grpc-timeout"]);
    config.server.timeouts.accept_deadline_header = false;
    assert_eq!(
        answered_after(&config, &[("grpc-timeout", "300m")]).await.0,
        SECS(2)
    );
}

/// Header names are not case-sensitive in HTTP, nor in the config: a name
/// written as a spec writes it is the header.
#[tokio::test(start_paused = true)]
async fn a_deadline_header_named_in_capitals_is_trusted() {
    let config = trusting(&["Connect-Timeout-Ms"]);
    let answer = answered_after(&config, &[("connect-timeout-ms", "300")]).await;
    assert_eq!(answer, (MS(300), StatusCode::SERVICE_UNAVAILABLE));
}

#[test]
fn a_name_that_is_no_deadline_header_of_its_direction_is_an_error_naming_it() {
    let mut config = Config::default();
    config.server.timeouts.deadline_headers = vec!["x-envoy-upstream-rq-timeout-ms".to_owned()];
    config.http.client.deadline_headers = vec!["x-request-timeout".to_owned()];
    let err = config.validate().unwrap_err();
    let keys: Vec<_> = err.keys().collect();
    assert_eq!(
        keys,
        [
            "server.timeouts.deadline_headers",
            "http.client.deadline_headers"
        ]
    );
    let text = err.to_string();
    assert!(text.contains("`x-request-timeout`"), "{text}");
    assert!(text.contains("`x-envoy-upstream-rq-timeout-ms`"), "{text}");
}

/// A config that was not validated still says, where a door is built from
/// it, which names it leaves out: the server's and the client's.
#[tokio::test]
async fn a_door_built_from_an_unvalidated_config_says_which_header_names_it_leaves_out() {
    use support::logs::Logs;

    let mut config = Config::default();
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.deadline_headers = vec!["x-timebox-deadline".to_owned()];
    config.http.client.deadline_headers = vec![
        "x-timebox-deadline-ms".to_owned(),
        "connect-timeout-ms".to_owned(),
    ];
    let inbound = (
        "`server.timeouts.deadline_headers` names `x-timebox-deadline`",
        "name=\"x-timebox-deadline\"",
    );
    let outbound = (
        "`http.client.deadline_headers` names `connect-timeout-ms`",
        "name=\"connect-timeout-ms\"",
    );
    // A door's name, how to build it, and the line it says.
    type Door<'a> = (&'a str, fn(&Config), (&'a str, &'a str));
    let doors: [Door<'_>; 4] = [
        (
            "TimeboxLayer",
            |config| drop(timebox::server::TimeboxLayer::new(config)),
            inbound,
        ),
        (
            "Client",
            |config| drop(timebox::client::Client::new(config)),
            outbound,
        ),
        (
            "the gRPC server layer",
            |config| drop(timebox::grpc::GrpcDeadlineLayer::server(config)),
            inbound,
        ),
        (
            "the gRPC client layer",
            |config| drop(timebox::grpc::GrpcDeadlineLayer::client(config)),
            outbound,
        ),
    ];
    for (door, build, (said, field)) in doors {
        let (logs, _guard) = Logs::capture();
        build(&config);
        let lines = logs.lines_with("names `");
        assert_eq!(lines.len(), 1, "{door}: {lines:?}");
        assert!(lines[0].contains(said), "{door}: {lines:?}");
        assert!(
            support::logs::has_field(&lines[0], field),
            "{door}: {lines:?}"
        );
        assert!(
            logs.lines_with("x-timebox-deadline-ms").is_empty(),
            "{door}"
        );
    }
}

/// `into_router` validates the config and logs its errors: the name it
/// leaves out is said once, in that error.
#[tokio::test]
async fn into_router_says_a_header_name_it_leaves_out_once() {
    use support::logs::Logs;

    let mut config = Config::default();
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.deadline_headers = vec!["x-timebox-deadline".to_owned()];
    let (logs, _guard) = Logs::capture();
    let _router: axum::Router = routes![slow].into_router(&config);
    logs.one_line_with("names `x-timebox-deadline`", &[]);
}

/// The host `up`, which answers its first request 503 and the rest 200;
/// what it was sent.
fn failing_once(sim: &Sim) -> Recorder {
    let recorder = Recorder::new();
    sim.net().host(
        "up",
        recording(&recorder, |n| async move {
            if n == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }),
    );
    recorder
}

#[sim_test]
async fn every_attempt_writes_each_listed_header_rounded_down(sim: Sim) {
    let recorder = failing_once(&sim);
    let mut config = Config::default();
    config.http.client.deadline_headers = vec![
        "x-timebox-deadline-ms".to_owned(),
        "x-envoy-upstream-rq-timeout-ms".to_owned(),
        "grpc-timeout".to_owned(),
    ];
    config.validate().expect("a valid config");
    let client = sim.client_with(&config);
    // 4999.7 ms left at the first attempt: rounded down, 4999.
    Deadline::after(SECS(5) - Duration::from_micros(300))
        .scope(client.get("http://up/").send())
        .await
        .unwrap();
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2, "a retry");
    for hit in &hits {
        let values = |name| {
            let values: Vec<_> = hit.headers.get_all(name).iter().collect();
            assert_eq!(values.len(), 1, "{name}: one value");
            values[0].to_str().unwrap().to_owned()
        };
        let timebox: u64 = values("x-timebox-deadline-ms").parse().unwrap();
        assert_eq!(
            values("x-envoy-upstream-rq-timeout-ms"),
            timebox.to_string()
        );
        assert_eq!(values("grpc-timeout"), format!("{timebox}m"));
        assert!(timebox <= 5000);
    }
    let first: u64 = hits[0].deadline_header.as_deref().unwrap().parse().unwrap();
    assert_eq!(first, 4999, "rounded down, never up");
    let second: u64 = hits[1].deadline_header.as_deref().unwrap().parse().unwrap();
    assert!(
        second < first,
        "the retry carries less: {first} then {second}"
    );
}

/// C3, I3: a shorter deadline the caller set in any listed format pins the
/// call's deadline as timebox's own header does: the first attempt sends
/// that value as it was set, the others say the same time, and the retry
/// sends what is left of it. None ever grants the task's longer deadline.
#[sim_test]
async fn a_shorter_value_the_caller_set_in_a_listed_format_is_kept(sim: Sim) {
    let recorder = failing_once(&sim);
    let mut config = Config::default();
    config.http.client.deadline_headers = vec![
        "x-timebox-deadline-ms".to_owned(),
        "grpc-timeout".to_owned(),
    ];
    config.validate().expect("a valid config");
    let client = sim.client_with(&config);
    Deadline::after(SECS(10))
        .scope(client.get("http://up/").header("grpc-timeout", "3S").send())
        .await
        .unwrap();
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2, "a retry");
    let values = |hit: usize, name| {
        let values: Vec<_> = hits[hit].headers.get_all(name).iter().collect();
        assert_eq!(values.len(), 1, "{name}: one value");
        values[0].to_str().unwrap().to_owned()
    };
    assert_eq!(values(0, "grpc-timeout"), "3S", "as the caller set it");
    assert_eq!(values(0, "x-timebox-deadline-ms"), "3000");
    let retried: u64 = values(1, "x-timebox-deadline-ms").parse().unwrap();
    assert!(retried < 3000, "the retry sends what is left: {retried}");
    assert_eq!(values(1, "grpc-timeout"), format!("{retried}m"));
}

/// C3 at its edges: with no deadline, a caller's Envoy `0` (no timeout, to
/// Envoy) is no deadline and goes out as set; with no outbound format
/// listed, a caller's own `x-timebox-deadline-ms` is still the client's
/// and does not go out.
#[sim_test]
async fn an_envoy_zero_is_no_deadline_and_timeboxs_header_stays_the_clients(sim: Sim) {
    let recorder = failing_once(&sim);
    let mut config = Config::default();
    config.http.client.deadline_headers = vec!["x-envoy-upstream-rq-timeout-ms".to_owned()];
    let client = sim.client_with(&config);
    client
        .get("http://up/")
        .header("x-envoy-upstream-rq-timeout-ms", "0")
        .send()
        .await
        .expect("no deadline: the retry answers");
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2, "a retry");
    assert_eq!(hits[0].headers["x-envoy-upstream-rq-timeout-ms"], "0");

    config.http.client.deadline_headers = Vec::new();
    let client = sim.client_with(&config);
    Deadline::after(SECS(1))
        .scope(
            client
                .get("http://up/")
                .header("x-timebox-deadline-ms", "60000")
                .send(),
        )
        .await
        .expect("the host answers");
    let last = recorder.hits().pop().expect("a request");
    assert!(
        !last.headers.contains_key("x-timebox-deadline-ms"),
        "{:?}",
        last.headers
    );
}
