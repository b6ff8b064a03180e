//! The request and response helpers of the client, with reqwest's names
//! and meanings, on the simulated network.

mod support;

use std::future::pending;

use axum::body::{Body, Bytes};
use axum::extract::RawQuery;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{any, get};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use timebox::client::{ClientError, RequestBuilder};
use timebox::deadline::Deadline;
use timebox::sim::Sim;
use timebox::sim_test;
use tokio::time::{sleep, Instant};

use support::time::{MS, SECS};

/// What the echo host saw of a request.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Seen {
    query: Option<String>,
    content_type: Option<String>,
    authorization: Option<String>,
    deadline: Option<String>,
    body: String,
}

async fn echo(RawQuery(query): RawQuery, headers: HeaderMap, body: Bytes) -> Json<Seen> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    Json(Seen {
        query,
        content_type: header("content-type"),
        authorization: header("authorization"),
        deadline: header("x-timebox-deadline-ms"),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn hosts(sim: &Sim) {
    sim.net().host("echo", Router::new().fallback(any(echo)));
    sim.net().host(
        "other",
        Router::new()
            .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
            .route("/down", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route("/text", get(|| async { "not json" }))
            .route("/hang", get(|| async { pending::<&str>().await }))
            .route(
                "/slow",
                get(|| async {
                    sleep(SECS(45)).await;
                    "late"
                }),
            )
            .route(
                "/drip",
                get(|| async {
                    let chunks = futures_util::stream::unfold(0_u32, |n| async move {
                        sleep(MS(100)).await;
                        Some((Ok::<_, std::io::Error>(Bytes::from(format!("{n};"))), n + 1))
                    });
                    Body::from_stream(chunks)
                }),
            ),
    );
}

/// What the echo host saw of `request`.
async fn seen_by_echo(request: RequestBuilder) -> Seen {
    request.send().await.unwrap().json().await.unwrap()
}

#[derive(Serialize)]
struct Order<'a> {
    item: &'a str,
    count: u32,
}

/// As reqwest's: a response says the URL it came from, the last hop's
/// after redirects, without the credentials the URL asked with.
#[sim_test]
async fn a_response_says_the_url_it_came_from(sim: Sim) {
    hosts(&sim);
    sim.net().host(
        "moved",
        Router::new().route(
            "/old",
            get(|| async {
                (
                    StatusCode::MOVED_PERMANENTLY,
                    [("location", "http://echo/new?x=1")],
                )
            }),
        ),
    );
    let client = sim.client();
    let response = client.get("http://moved/old").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.url().as_str(), "http://echo/new?x=1");
    let response = client.get("http://ada:pw@echo/here").send().await.unwrap();
    assert_eq!(response.url().as_str(), "http://echo/here");
}

/// As reqwest's: a response says its body's length when it is known,
/// the length of the body it has (none for a `HEAD`); a simulated host
/// has no address.
#[sim_test]
async fn a_response_says_its_body_length_and_no_address_from_a_simulated_host(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let response = client.get("http://other/text").send().await.unwrap();
    assert_eq!(response.content_length(), Some("not json".len() as u64));
    assert_eq!(response.remote_addr(), None);
    let streamed = client.get("http://other/drip").send().await.unwrap();
    assert_eq!(streamed.content_length(), None, "a body sent in chunks");
    let head = client.head("http://other/text").send().await.unwrap();
    assert_eq!(
        head.content_length(),
        Some(0),
        "a HEAD's answer has no body"
    );
}

/// A transport whose every answer is an empty `200` over HTTP/2.
#[derive(Debug)]
struct Http2Answers;

impl timebox::client::Transport for Http2Answers {
    fn send(&self, _: http::Request<Bytes>) -> timebox::client::TransportFuture {
        let empty = futures_util::stream::empty::<Result<Bytes, std::io::Error>>();
        let answer = http::Response::builder()
            .version(http::Version::HTTP_2)
            .body(timebox::client::ResponseBody::from_stream(empty))
            .expect("a valid answer");
        Box::pin(async move { Ok(answer) })
    }
}

/// The version is the one the transport's answer came in.
#[tokio::test]
async fn a_response_says_the_version_its_transport_answered_in() {
    let client = timebox::client::Client::builder()
        .transport(std::sync::Arc::new(Http2Answers))
        .build();
    let response = client.get("http://up/").send().await.unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
}

/// As reqwest's: `headers` replaces the headers of its names set before,
/// and leaves the others.
#[sim_test]
async fn headers_replace_the_headers_of_their_names(sim: Sim) {
    hosts(&sim);
    let mut more = HeaderMap::new();
    more.insert("authorization", "Basic b2s=".parse().unwrap());
    let seen = seen_by_echo(
        sim.client()
            .post("http://echo/notes")
            .header("authorization", "Bearer old")
            .header("content-type", "text/plain")
            .headers(more)
            .body("note"),
    )
    .await;
    assert_eq!(seen.authorization.as_deref(), Some("Basic b2s="));
    assert_eq!(seen.content_type.as_deref(), Some("text/plain"));

    // Every value of a name the map holds twice, in place of the one set
    // before.
    sim.net().host(
        "tags",
        Router::new().fallback(any(|headers: HeaderMap| async move {
            let tags: Vec<&str> = headers
                .get_all("x-tag")
                .iter()
                .filter_map(|value| value.to_str().ok())
                .collect();
            tags.join(",")
        })),
    );
    let mut tags = HeaderMap::new();
    tags.append("x-tag", "a".parse().unwrap());
    tags.append("x-tag", "b".parse().unwrap());
    let sent = sim
        .client()
        .get("http://tags/")
        .header("x-tag", "old")
        .headers(tags)
        .send()
        .await
        .unwrap();
    assert_eq!(sent.text().await.unwrap(), "a,b");
}

#[sim_test]
async fn json_form_query_and_bearer_auth_mean_what_they_mean_in_reqwest(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let seen = seen_by_echo(
        client
            .post("http://echo/orders?source=app")
            .query(&[("page", "2"), ("q", "a b")])
            .bearer_auth("s3cret")
            .json(&Order {
                item: "tea",
                count: 2,
            }),
    )
    .await;
    assert_eq!(
        seen,
        Seen {
            query: Some("source=app&page=2&q=a+b".to_owned()),
            content_type: Some("application/json".to_owned()),
            authorization: Some("Bearer s3cret".to_owned()),
            deadline: None,
            body: r#"{"item":"tea","count":2}"#.to_owned(),
        }
    );

    let seen = seen_by_echo(client.post("http://echo/orders").form(&Order {
        item: "tea",
        count: 2,
    }))
    .await;
    assert_eq!(seen.body, "item=tea&count=2");
    assert_eq!(
        seen.content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
}

/// `put`, `patch`, `delete` and `head` send their methods, as reqwest's do.
#[sim_test]
async fn each_method_helper_sends_its_method(sim: Sim) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let host = {
        let seen = seen.clone();
        any(move |method: axum::http::Method| {
            seen.lock().unwrap().push(method.to_string());
            async { StatusCode::OK }
        })
    };
    sim.net().host("methods", Router::new().fallback(host));
    let client = sim.client();
    let url = "http://methods/";
    for request in [
        client.get(url),
        client.post(url),
        client.put(url),
        client.patch(url),
        client.delete(url),
        client.head(url),
    ] {
        assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
    }
    assert_eq!(
        *seen.lock().unwrap(),
        ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
    );
}

#[sim_test]
async fn basic_auth_and_credentials_in_the_url_mean_what_they_mean_in_reqwest(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let authorization = |seen: Seen| seen.authorization.expect("an authorization header");
    // "user:p@ss" and "user:" in base64.
    let seen = seen_by_echo(client.get("http://echo/").basic_auth("user", Some("p@ss"))).await;
    assert_eq!(authorization(seen), "Basic dXNlcjpwQHNz");
    let seen = seen_by_echo(client.get("http://echo/").basic_auth("user", None::<&str>)).await;
    assert_eq!(authorization(seen), "Basic dXNlcjo=");
    // In the URL, percent-encoded, they go as the same header.
    let seen = seen_by_echo(client.get("http://user:p%40ss@echo/")).await;
    assert_eq!(authorization(seen), "Basic dXNlcjpwQHNz");
    // A header set for the request wins over the URL's.
    let seen = seen_by_echo(client.get("http://user:p%40ss@echo/").bearer_auth("t0ken")).await;
    assert_eq!(authorization(seen), "Bearer t0ken");
}

/// A filter whose fields are all optional: `None` adds no pair.
#[derive(Serialize)]
struct Filter {
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<u32>,
}

#[sim_test]
async fn a_query_with_no_pairs_leaves_the_url_as_it_was(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let seen = seen_by_echo(
        client
            .get("http://echo/orders?source=app")
            .query(&Filter { page: None }),
    )
    .await;
    assert_eq!(seen.query.as_deref(), Some("source=app"));
    let seen = seen_by_echo(
        client
            .get("http://echo/orders")
            .query(&Filter { page: None }),
    )
    .await;
    assert_eq!(seen.query, None);
    let seen = seen_by_echo(
        client
            .get("http://echo/orders")
            .query(&Filter { page: Some(3) }),
    )
    .await;
    assert_eq!(seen.query.as_deref(), Some("page=3"));
}

#[sim_test]
async fn a_content_type_set_by_the_caller_is_kept(sim: Sim) {
    hosts(&sim);
    let seen = seen_by_echo(
        sim.client()
            .post("http://echo/")
            .header("content-type", "application/merge-patch+json")
            .json(&Order {
                item: "tea",
                count: 1,
            }),
    )
    .await;
    assert_eq!(
        seen.content_type.as_deref(),
        Some("application/merge-patch+json")
    );
}

#[sim_test]
async fn error_for_status_turns_4xx_and_5xx_into_errors(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let checked = |url: &'static str| {
        let request = client.get(url).retries(0);
        async move { request.send().await.unwrap().error_for_status() }
    };
    // The error keeps the URL without its query or user info, also in its
    // `Debug`.
    for (url, status, shown) in [
        (
            "http://other/missing",
            StatusCode::NOT_FOUND,
            "http://other/missing",
        ),
        (
            "http://u:secret@other/down?key=secret",
            StatusCode::SERVICE_UNAVAILABLE,
            "http://other/down",
        ),
    ] {
        let err = checked(url).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Status { status: got, url } if *got == status && url.as_str() == shown),
            "{url}: {err:?}"
        );
        assert!(!format!("{err:?}").contains("secret"), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("the server answered {status} for {shown}")
        );
        assert_eq!(err.status(), Some(status));
    }
    assert!(checked("http://echo/").await.is_ok());
    assert_eq!(ClientError::Timeout.status(), None);
}

#[sim_test]
async fn a_body_that_is_not_the_json_asked_for_is_a_decode_error(sim: Sim) {
    hosts(&sim);
    let response = sim.client().get("http://other/text").send().await.unwrap();
    let err = response.json::<Seen>().await.unwrap_err();
    assert!(matches!(err, ClientError::Decode(_)), "{err:?}");
    // The cause is said once, by `source()`, as error reporters expect.
    let cause = std::error::Error::source(&err).expect("serde's error");
    assert_eq!(
        err.to_string(),
        "the response body is not the JSON expected"
    );
    assert!(!cause.to_string().is_empty());
}

#[sim_test]
async fn timeout_bounds_the_whole_call_and_only_shortens_the_deadline(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let start = Instant::now();
    let err = client
        .get("http://other/hang")
        .timeout(MS(300))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_deadline_exceeded(), "{err:?}");
    assert_eq!(start.elapsed(), MS(300));

    let start = Instant::now();
    let err = Deadline::after(MS(100))
        .scope(client.get("http://other/hang").timeout(SECS(5)).send())
        .await
        .unwrap_err();
    assert!(err.is_deadline_exceeded());
    assert_eq!(
        start.elapsed(),
        MS(100),
        "the enclosing deadline is earlier"
    );
}

#[sim_test]
async fn a_timeout_longer_than_timeout_secs_is_each_attempts_timeout_too(sim: Sim) {
    hosts(&sim);
    // `http.client.timeout_secs` is 30: an attempt of the 45 s endpoint
    // would be cut there, and its retries too.
    answered_in_one_attempt(sim.client().get("http://other/slow").timeout(SECS(120))).await;
}

/// Sends `request` for the 45 s endpoint, which must answer within one
/// attempt, run to its end.
async fn answered_in_one_attempt(request: RequestBuilder) {
    let start = Instant::now();
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(start.elapsed(), SECS(45), "one attempt, to the end");
}

#[sim_test]
async fn an_attempt_timeout_replaces_timeout_secs_and_sets_no_deadline(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    // Longer than `http.client.timeout_secs` (30).
    answered_in_one_attempt(client.get("http://other/slow").attempt_timeout(SECS(60))).await;
    // Shorter: the attempt ends at it.
    let start = Instant::now();
    let err = client
        .get("http://other/hang")
        .attempt_timeout(SECS(1))
        .retries(0)
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err:?}");
    assert_eq!(start.elapsed(), SECS(1));
    // No deadline: none goes out.
    let seen = seen_by_echo(client.get("http://echo/").attempt_timeout(SECS(60))).await;
    assert_eq!(seen.deadline, None);
    // Zero is refused, naming the option; a zero `timeout` is a deadline
    // that has passed.
    let refused = client
        .get("http://echo/")
        .attempt_timeout(MS(0))
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ClientError::InvalidRequest(said) if said.contains("`attempt_timeout`")),
        "{refused:?}"
    );
    let expired = client
        .get("http://echo/")
        .timeout(MS(0))
        .send()
        .await
        .unwrap_err();
    assert!(expired.is_deadline_exceeded(), "{expired:?}");
}

#[sim_test]
async fn the_body_stream_ends_with_the_deadline(sim: Sim) {
    hosts(&sim);
    let client = sim.client();
    let chunks: Vec<_> = Deadline::after(MS(350))
        .scope(async {
            let response = client.get("http://other/drip").send().await.unwrap();
            response.bytes_stream().collect().await
        })
        .await;
    let [first, second, third, last] = &chunks[..] else {
        panic!("three chunks and the deadline: {chunks:?}");
    };
    assert_eq!(first.as_ref().unwrap(), "0;");
    assert_eq!(second.as_ref().unwrap(), "1;");
    assert_eq!(third.as_ref().unwrap(), "2;");
    assert!(last.as_ref().unwrap_err().is_deadline_exceeded());
}

#[sim_test]
async fn a_request_that_cannot_be_built_says_which_part(sim: Sim) {
    hosts(&sim);
    let err = sim
        .client()
        .get("http://echo/")
        .bearer_auth("line\nbreak")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: the bearer token is not a valid header value"
    );
}

/// An upstream failure answered `502` (axum) or `UNAVAILABLE` (tonic) is
/// logged with its causes: "request failed" alone says nothing at 3 am.
#[test]
fn an_outbound_failure_answered_for_the_caller_logs_its_cause() {
    use axum::response::IntoResponse;
    use support::logs::Logs;

    let failure = || ClientError::Transport("connection reset by peer".into());
    let (logs, _guard) = Logs::capture();
    assert_eq!(failure().into_response().status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        tonic::Status::from(failure()).code(),
        tonic::Code::Unavailable
    );
    let lines = logs.lines_with("outbound call failed");
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in lines {
        assert!(line.contains("connection reset by peer"), "{line}");
    }
}

/// A request logged with `{:?}` (a `#[tracing::instrument]` argument) shows
/// where it goes, not the credentials it carries.
#[test]
fn a_request_builders_debug_shows_no_credentials() {
    let client = timebox::client::Client::new(&timebox::config::Config::default());
    let request = client
        .get("http://svc:hunter2@api.internal/orders?page=2")
        .header("authorization", "Bearer s3cret-token")
        .header("cookie", "session=c00kie")
        .header("proxy-authorization", "Basic cHJveHk=")
        .header("x-trace", "visible");
    let shown = format!("{request:?}");
    for secret in ["hunter2", "svc:", "s3cret-token", "c00kie", "cHJveHk"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    for seen in ["GET", "http://***@api.internal/orders?page=2", "visible"] {
        assert!(shown.contains(seen), "{seen} not in {shown}");
    }
    assert!(!shown.contains("Config"), "the client's settings: {shown}");
    // Given in a map, as by `headers`.
    let mut map = HeaderMap::new();
    map.insert("cookie", "session=m4pped".parse().unwrap());
    let mapped = format!("{:?}", client.get("http://api.internal/").headers(map));
    assert!(!mapped.contains("m4pped"), "{mapped}");
    // One that does not parse, with the error `.query()` keeps for `send`.
    let unparsed = client
        .get("http://svc:hunter2@api internal/x")
        .query(&[("page", "2")]);
    let unparsed_shown = format!("{unparsed:?}");
    assert!(!unparsed_shown.contains("hunter2"), "{unparsed_shown}");
    assert!(
        unparsed_shown.contains("the url does not parse"),
        "{unparsed_shown}"
    );
}

#[tokio::test]
async fn a_url_that_does_not_parse_is_an_invalid_request_saying_why() {
    let client = timebox::client::Client::new(&timebox::config::Config::default());
    let err = client
        .get("no scheme here")
        .send()
        .await
        .expect_err("nowhere to send it");
    assert!(matches!(err, ClientError::InvalidRequest(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "invalid request: the url does not parse: relative URL without a base"
    );
}

/// As reqwest's `Pending`: `send` gives a named future, to keep in a
/// struct, that does nothing until polled and takes the deadline current
/// then.
#[sim_test]
async fn send_gives_a_named_future_that_takes_the_deadline_where_it_runs(sim: Sim) {
    struct Kept {
        call: timebox::client::Pending,
    }
    hosts(&sim);
    let kept = Kept {
        call: sim.client().get("http://echo/").send(),
    };
    let response = Deadline::after(SECS(2)).scope(kept.call).await.unwrap();
    let seen: Seen = response.json().await.unwrap();
    assert_eq!(seen.deadline.as_deref(), Some("2000"));
}
