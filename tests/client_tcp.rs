//! The outbound client (DESIGN §4) on real sockets: axum servers on
//! 127.0.0.1 with port 0, reqwest underneath, real time. Every wait is
//! short; durations are only checked as generous upper bounds.

mod support;

use std::convert::Infallible;
use std::future::pending;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use futures_util::{stream, StreamExt};
use http::header::{AUTHORIZATION, COOKIE, LOCATION, PROXY_AUTHORIZATION};
use http::StatusCode;
use timebox::client::{Client, ClientError};
use timebox::config::Config;
use timebox::deadline::header::DEADLINE_HEADER;
use timebox::deadline::Deadline;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{sleep, Instant};

use support::ports::Refusing;
use support::time::{MS, SECS};
use support::upstream::{
    a_default_authorization, ends, goes_out_as_set, recording, redirecting_to_another_origin,
    serve, the_redirect_was_the_answer, Recorder,
};

fn client() -> Client {
    Client::new(&Config::default())
}

fn deadline_ms(headers: &http::HeaderMap) -> u64 {
    headers
        .get(DEADLINE_HEADER)
        .expect("the hop carries the deadline header")
        .to_str()
        .expect("an ASCII value")
        .parse()
        .expect("whole milliseconds")
}

/// A redirect to `location`.
fn redirect(status: StatusCode, location: &str) -> Response {
    (status, [(LOCATION, location.to_owned())]).into_response()
}

/// A router whose every path is recorded and answered by `answer(path)`.
fn routed<F>(recorder: &Recorder, answer: F) -> Router
where
    F: Fn(&str) -> Response + Clone + Send + Sync + 'static,
{
    let recorder = recorder.clone();
    Router::new().fallback(move |request: Request| {
        let recorder = recorder.clone();
        let answer = answer.clone();
        async move {
            recorder.record(&request);
            answer(request.uri().path())
        }
    })
}

/// As reqwest's: a response over the client's reqwest transport says the
/// version it came in, the address it came from and its body's length.
#[tokio::test]
async fn a_response_says_its_version_address_and_length() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("the client connects");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            socket.read_exact(&mut byte).await.expect("a request head");
            head.push(byte[0]);
        }
        socket
            .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .await
            .expect("the answer is written");
    });
    let response = ends(client().get(format!("http://{addr}/")).send())
        .await
        .unwrap();
    assert_eq!(response.version(), http::Version::HTTP_10);
    assert_eq!(response.remote_addr(), Some(addr));
    assert_eq!(response.content_length(), Some(5));
}

/// ...and the length of the body it has: none for the answer to a `HEAD`,
/// whose `Content-Length` is the body a `GET` would have.
#[tokio::test]
async fn a_heads_answer_has_no_body_length() {
    let recorder = Recorder::new();
    let addr = serve(routed(&recorder, |_| "hello".into_response())).await;
    let response = ends(client().head(format!("http://{addr}/")).send())
        .await
        .unwrap();
    assert_eq!(response.headers()["content-length"], "5");
    assert_eq!(response.content_length(), Some(0));
}

// C1/C2: a hanging upstream ends the call at the deadline.

#[tokio::test]
async fn a_hanging_server_ends_the_call_with_deadline_exceeded_after_one_hit() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        pending::<()>().await;
        "never"
    }))
    .await;
    let client = client();

    let start = Instant::now();
    let outcome =
        ends(Deadline::after(MS(300)).scope(client.get(format!("http://{addr}/")).send())).await;

    let err = outcome.expect_err("a hanging server gives no response");
    assert!(err.is_deadline_exceeded(), "{err:?}");
    assert!(matches!(err, ClientError::DeadlineExceeded(_)), "{err:?}");
    assert_eq!(err.to_string(), "deadline exceeded");
    // Ended by the 300 ms deadline, not by the 30 s attempt timeout.
    assert!(start.elapsed() < SECS(2), "{:?}", start.elapsed());
    assert_eq!(recorder.count(), 1, "{:?}", recorder.hits());
}

// C6: a retry that does not fit is not started; the last 503 comes back.

#[tokio::test]
async fn retries_of_a_quick_503_stop_when_they_no_longer_fit_and_return_the_last_503() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        StatusCode::SERVICE_UNAVAILABLE
    }))
    .await;
    let client = client();

    let outcome = ends(
        Deadline::after(MS(700)).scope(client.get(format!("http://{addr}/")).retries(50).send()),
    )
    .await;

    let response = outcome.expect("the last 503 is returned, not an error");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let hits = recorder.count();
    assert!((2..=50).contains(&hits), "{hits} hits");
}

// C2: a body cut off by the deadline.

#[tokio::test]
async fn a_body_that_never_ends_is_cut_off_by_the_deadline_after_the_headers_arrived() {
    let recorder = Recorder::new();
    let addr = serve(recording(&recorder, |_| async {
        let chunks =
            stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"first chunk")) })
                .chain(stream::pending());
        Body::from_stream(chunks)
    }))
    .await;
    let client = client();

    let (sent, text) = ends(Deadline::after(MS(300)).scope(async {
        match client.get(format!("http://{addr}/")).send().await {
            Ok(response) => {
                let status = response.status();
                (Ok(status), Some(response.text().await))
            }
            Err(err) => (Err(err), None),
        }
    }))
    .await;

    assert_eq!(sent.expect("the headers arrive in time"), StatusCode::OK);
    let err = text
        .expect("the body was read")
        .expect_err("an endless body cannot be read whole");
    assert!(err.is_deadline_exceeded(), "{err:?}");
    assert_eq!(err.to_string(), "deadline exceeded");
    assert_eq!(recorder.count(), 1);
}

// C3 + C7: every hop carries its own time left.

#[tokio::test]
async fn a_redirect_hop_after_a_slow_first_hop_carries_less_time_left() {
    let recorder = Recorder::new();
    let seen = recorder.clone();
    let router = Router::new()
        .route(
            "/r",
            get(move |request: Request| {
                let seen = seen.clone();
                async move {
                    seen.record(&request);
                    sleep(MS(500)).await;
                    redirect(StatusCode::TEMPORARY_REDIRECT, "/t")
                }
            }),
        )
        .route(
            "/t",
            get({
                let seen = recorder.clone();
                move |request: Request| async move {
                    seen.record(&request);
                    "target"
                }
            }),
        );
    let addr = serve(router).await;
    let client = client();

    let response =
        ends(Deadline::after(SECS(3)).scope(client.get(format!("http://{addr}/r")).send()))
            .await
            .expect("the redirect is followed");

    assert_eq!(response.status(), StatusCode::OK);
    let hits = recorder.hits();
    let paths: Vec<&str> = hits.iter().map(|hit| hit.path.as_str()).collect();
    assert_eq!(paths, ["/r", "/t"]);
    let first = deadline_ms(&hits[0].headers);
    let second = deadline_ms(&hits[1].headers);
    assert!(first <= 3000, "first hop sent {first} ms");
    assert!(
        second + 400 <= first,
        "first hop {first} ms, second hop {second} ms"
    );
}

// C7: at most 10 hops.

fn chain_router(recorder: &Recorder) -> Router {
    let recorder = recorder.clone();
    Router::new().route(
        "/h/{n}",
        get(move |Path(n): Path<u32>, request: Request| {
            let recorder = recorder.clone();
            async move {
                recorder.record(&request);
                if n == 0 {
                    "end of the chain".into_response()
                } else {
                    redirect(StatusCode::FOUND, &format!("/h/{}", n - 1))
                }
            }
        }),
    )
}

#[tokio::test]
async fn a_chain_of_ten_redirects_is_followed_to_the_end() {
    let recorder = Recorder::new();
    let addr = serve(chain_router(&recorder)).await;
    let client = client();

    let response =
        ends(Deadline::after(SECS(2)).scope(client.get(format!("http://{addr}/h/10")).send()))
            .await
            .expect("ten redirects are followed");

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        ends(response.text()).await.expect("a short body"),
        "end of the chain"
    );
    assert_eq!(recorder.count(), 11);
}

#[tokio::test]
async fn an_eleventh_redirect_is_too_many() {
    let recorder = Recorder::new();
    let addr = serve(chain_router(&recorder)).await;
    let client = client();

    let err =
        ends(Deadline::after(SECS(2)).scope(client.get(format!("http://{addr}/h/11")).send()))
            .await
            .expect_err("eleven redirects are too many");

    assert!(matches!(err, ClientError::TooManyRedirects), "{err:?}");
    let hits = recorder.hits();
    assert_eq!(hits.len(), 11, "{hits:?}");
    assert!(hits.iter().all(|hit| hit.path != "/h/0"), "{hits:?}");
}

// C7: credentials stay within their origin.

#[tokio::test]
async fn a_redirect_to_another_port_drops_authorization_and_cookie() {
    let other_seen = Recorder::new();
    let other = serve(routed(&other_seen, |_| "other origin".into_response())).await;
    let first_seen = Recorder::new();
    let location = format!("http://{other}/landing");
    let first = serve(routed(&first_seen, move |_| {
        redirect(StatusCode::TEMPORARY_REDIRECT, &location)
    }))
    .await;
    let client = client();

    let response = ends(
        client
            .get(format!("http://{first}/go"))
            .header(AUTHORIZATION, "Bearer secret")
            .header(COOKIE, "session=secret")
            .header(PROXY_AUTHORIZATION, "Basic secret")
            .header("x-trace", "kept")
            .send(),
    )
    .await
    .expect("the redirect is followed");

    assert_eq!(response.status(), StatusCode::OK);
    let sent = &first_seen.hits()[0].headers;
    assert_eq!(sent.get(AUTHORIZATION).unwrap(), "Bearer secret");
    assert_eq!(sent.get(COOKIE).unwrap(), "session=secret");
    assert_eq!(sent.get(PROXY_AUTHORIZATION).unwrap(), "Basic secret");
    let hits = other_seen.hits();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let landed = &hits[0].headers;
    assert_eq!(landed.get(AUTHORIZATION), None, "{landed:?}");
    assert_eq!(landed.get(COOKIE), None, "{landed:?}");
    assert_eq!(landed.get(PROXY_AUTHORIZATION), None, "{landed:?}");
    assert_eq!(landed.get("x-trace").unwrap(), "kept");
}

/// C7 through a caller's own reqwest client, whose default headers timebox
/// cannot take off a hop: a redirect to another origin is the answer, so
/// its `Authorization` never reaches that origin.
#[tokio::test]
async fn through_a_callers_reqwest_client_a_redirect_to_another_origin_is_the_answer() {
    let other_seen = Recorder::new();
    let first = redirecting_to_another_origin(&other_seen).await;
    let reqwest = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(a_default_authorization())
        .build()
        .unwrap();
    let client = Client::builder().reqwest(reqwest).build();
    let response = ends(client.get(format!("http://{first}/go")).send())
        .await
        .expect("an answer");
    the_redirect_was_the_answer(response.status(), &other_seen);
}

#[tokio::test]
async fn a_redirect_within_the_same_origin_keeps_authorization_and_cookie() {
    let recorder = Recorder::new();
    let addr = serve(routed(&recorder, |path| {
        if path == "/go" {
            redirect(StatusCode::TEMPORARY_REDIRECT, "/landing")
        } else {
            "same origin".into_response()
        }
    }))
    .await;
    let client = client();

    let response = ends(
        client
            .get(format!("http://{addr}/go"))
            .header(AUTHORIZATION, "Bearer secret")
            .header(COOKIE, "session=secret")
            .send(),
    )
    .await
    .expect("the redirect is followed");

    assert_eq!(response.status(), StatusCode::OK);
    let hits = recorder.hits();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[1].path, "/landing");
    let landed = &hits[1].headers;
    assert_eq!(landed.get(AUTHORIZATION).unwrap(), "Bearer secret");
    assert_eq!(landed.get(COOKIE).unwrap(), "session=secret");
}

// C7: 303, and 301/302 for a POST, turn it into a GET without the body;
// 307 and 308 keep the method and the body.

#[tokio::test]
async fn a_redirected_post_keeps_or_drops_its_method_and_body_as_the_status_says() {
    type Seen = Arc<Mutex<Vec<(String, String, Bytes)>>>;
    for (status, method, body) in [
        (StatusCode::MOVED_PERMANENTLY, "GET", ""),
        (StatusCode::FOUND, "GET", ""),
        (StatusCode::SEE_OTHER, "GET", ""),
        (StatusCode::TEMPORARY_REDIRECT, "POST", "payload"),
        (StatusCode::PERMANENT_REDIRECT, "POST", "payload"),
    ] {
        let seen: Seen = Arc::default();
        let router = Router::new().fallback(any({
            let seen = seen.clone();
            move |method: http::Method, uri: http::Uri, body: Bytes| async move {
                seen.lock()
                    .unwrap()
                    .push((method.to_string(), uri.path().to_owned(), body));
                if uri.path() == "/submit" {
                    redirect(status, "/result")
                } else {
                    "result".into_response()
                }
            }
        }));
        let addr = serve(router).await;

        let response = ends(
            client()
                .post(format!("http://{addr}/submit"))
                .header(http::header::CONTENT_TYPE, "text/plain")
                .body("payload")
                .send(),
        )
        .await
        .expect("the redirect is followed");

        assert_eq!(response.status(), StatusCode::OK, "{status}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                (
                    "POST".to_owned(),
                    "/submit".to_owned(),
                    Bytes::from_static(b"payload")
                ),
                (
                    method.to_owned(),
                    "/result".to_owned(),
                    Bytes::from_static(body.as_bytes())
                ),
            ],
            "{status}"
        );
    }
}

/// C7: a redirect's body is not read: one that never ends does not hold
/// the call.
#[tokio::test]
async fn a_redirect_whose_body_never_ends_is_followed_at_once() {
    let recorder = Recorder::new();
    let addr = serve(routed(&recorder, |path| {
        if path == "/go" {
            let endless = futures_util::stream::pending::<Result<Bytes, std::io::Error>>();
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(LOCATION, "/landing")],
                axum::body::Body::from_stream(endless),
            )
                .into_response()
        } else {
            "landed".into_response()
        }
    }))
    .await;
    let response = ends(client().get(format!("http://{addr}/go")).send())
        .await
        .expect("the redirect is followed");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(ends(response.text()).await.unwrap(), "landed");
    let paths: Vec<String> = recorder.hits().into_iter().map(|hit| hit.path).collect();
    assert_eq!(paths, ["/go", "/landing"]);
}

// C4: non-idempotent requests retry only when they opt in.

fn always_503(recorder: &Recorder) -> Router {
    recording(recorder, |_| async { StatusCode::SERVICE_UNAVAILABLE })
}

fn idempotency_keys(recorder: &Recorder) -> Vec<Vec<String>> {
    recorder
        .hits()
        .iter()
        .map(|hit| {
            hit.headers
                .get_all("idempotency-key")
                .iter()
                .map(|value| value.to_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn a_post_answered_503_is_not_retried_by_default() {
    let recorder = Recorder::new();
    let addr = serve(always_503(&recorder)).await;
    let client = client();

    let response = ends(
        Deadline::after(SECS(2)).scope(client.post(format!("http://{addr}/")).body("order").send()),
    )
    .await
    .expect("the 503 is the response");

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(recorder.count(), 1, "{:?}", recorder.hits());
}

#[tokio::test]
async fn an_opted_in_post_is_retried_with_one_idempotency_key_on_every_attempt() {
    let recorder = Recorder::new();
    let addr = serve(always_503(&recorder)).await;
    let client = client();

    let response = ends(
        Deadline::after(SECS(2)).scope(
            client
                .post(format!("http://{addr}/"))
                .body("order")
                .retries(2)
                .retry_non_idempotent()
                .send(),
        ),
    )
    .await
    .expect("the last 503 is the response");

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let keys = idempotency_keys(&recorder);
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(keys[0].len(), 1, "{keys:?}");
    assert!(!keys[0][0].is_empty(), "{keys:?}");
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
}

#[tokio::test]
async fn an_opted_in_post_keeps_the_callers_own_idempotency_key_on_every_attempt() {
    let recorder = Recorder::new();
    let addr = serve(always_503(&recorder)).await;
    let client = client();

    let response = ends(
        Deadline::after(SECS(2)).scope(
            client
                .post(format!("http://{addr}/"))
                .header("Idempotency-Key", "order-42")
                .body("order")
                .retries(2)
                .retry_non_idempotent()
                .send(),
        ),
    )
    .await
    .expect("the last 503 is the response");

    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let keys = idempotency_keys(&recorder);
    assert_eq!(keys, vec![vec!["order-42".to_owned()]; 3]);
}

// C4: a refused connection is a connect error.

#[tokio::test]
async fn a_refused_connection_without_retries_is_a_connect_error() {
    let refusing = Refusing::new();
    let addr = refusing.addr();
    let client = client();

    let err = ends(
        Deadline::after(SECS(2)).scope(client.get(format!("http://{addr}/")).retries(0).send()),
    )
    .await
    .expect_err("nothing listens on the port");

    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
    assert_eq!(err.to_string(), "connection failed");
    drop(refusing);
}

// §15 C3: a caller's shorter header goes out as set on the first attempt.

#[tokio::test]
async fn a_callers_shorter_deadline_header_goes_out_exactly_as_set() {
    let recorder = Recorder::new();
    let addr = serve(routed(&recorder, |_| StatusCode::OK.into_response())).await;
    let url = format!("http://{addr}/");
    let client = client();
    let call = || client.get(&url).header(DEADLINE_HEADER, "200").send();
    goes_out_as_set(&recorder, 200, || async {
        ends(call()).await.unwrap();
    })
    .await;
    // Under a longer task deadline too.
    goes_out_as_set(&recorder, 200, || async {
        ends(Deadline::after(SECS(5)).scope(call())).await.unwrap();
    })
    .await;
}

/// `/from` redirects to `/to`, which answers "arrived".
fn redirecting() -> Router {
    Router::new()
        .route(
            "/from",
            get(|| async { (StatusCode::FOUND, [(LOCATION, "/to")]) }),
        )
        .route("/to", get(|| async { "arrived" }))
}

#[tokio::test]
async fn an_existing_reqwest_client_without_redirects_is_used_and_timebox_follows_them() {
    let addr = serve(redirecting()).await;
    let reqwest = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let client = Client::builder().reqwest(reqwest).build();
    let response = ends(client.get(format!("http://{addr}/from")).send())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "arrived");
}

#[tokio::test]
async fn a_refused_redirecting_client_is_no_failure_of_the_host() {
    let addr = serve(redirecting()).await;
    let recording = timebox::observe::Recording::new();
    let client = Client::builder()
        .config(&Config::default().observed_by(recording.clone()))
        .reqwest(reqwest::Client::new())
        .build();
    for _ in 0..3 {
        ends(client.get(format!("http://{addr}/from")).send())
            .await
            .unwrap_err();
    }
    assert_eq!(
        support::observe::breaker_calls(&recording.events()),
        [timebox::observe::BreakerCallOutcome::Cancelled; 3],
        "the host answered; the client was set up wrong"
    );
}

/// B6: a request reqwest could not build (an `http` URL for an
/// `https_only` client) never reached the host, which is not blamed for it.
#[tokio::test]
async fn a_request_reqwest_could_not_build_is_no_failure_of_the_host() {
    let recording = timebox::observe::Recording::new();
    let reqwest = reqwest::Client::builder()
        .https_only(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let client = Client::builder()
        .config(&Config::default().observed_by(recording.clone()))
        .reqwest(reqwest)
        .build();
    for _ in 0..12 {
        let err = ends(client.get("http://127.0.0.1:9/").send())
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    }
    assert_eq!(
        support::observe::breaker_calls(&recording.events()),
        [timebox::observe::BreakerCallOutcome::Cancelled; 12],
        "the host was never asked"
    );
}

#[tokio::test]
async fn a_reqwest_client_that_follows_redirects_itself_is_refused_at_the_first() {
    // Both ends carry a query, which the error leaves out.
    let addr = serve(
        Router::new()
            .route(
                "/from",
                get(|| async { (StatusCode::FOUND, [(LOCATION, "/to?sig=s3cret")]) }),
            )
            .route("/to", get(|| async { "arrived" })),
    )
    .await;
    let client = Client::builder().reqwest(reqwest::Client::new()).build();
    let err = ends(client.get(format!("http://{addr}/from?sig=s3cret")).send())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    let why = std::error::Error::source(&err).unwrap();
    assert!(why.is::<timebox::client::RedirectsOn>(), "{why:?}");
    // The URLs it names are cut to their paths: a query may hold secrets.
    assert!(
        why.to_string()
            .contains(&format!("(http://{addr}/from ended at http://{addr}/to)")),
        "{why}"
    );
    assert!(!why.to_string().contains("s3cret"), "{why}");
    assert!(
        why.to_string()
            .contains("`.redirect(reqwest::redirect::Policy::none())`"),
        "{why}"
    );
}

/// The error a server logs when it answers for a failed call names where
/// the call went, but not the query or credentials of its URL.
#[tokio::test]
async fn a_failed_calls_error_shows_its_url_without_query_or_credentials() {
    let refusing = Refusing::new();
    let addr = refusing.addr();
    let client = client();

    let err = ends(
        Deadline::after(SECS(2)).scope(
            client
                .get(format!("http://svc:hunter2@{addr}/orders?sig=s3cret#top"))
                .retries(0)
                .send(),
        ),
    )
    .await
    .expect_err("nothing listens on the port");

    let mut chain = String::new();
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(err) = link {
        chain.push_str(&format!("{err}; "));
        link = err.source();
    }
    assert!(chain.contains(&format!("http://{addr}/orders)")), "{chain}");
    for secret in ["s3cret", "hunter2", "svc", "#top"] {
        assert!(!chain.contains(secret), "{secret} in {chain}");
    }
    drop(refusing);
}

/// reqwest 0.13 loads the system's CA certificates when a client is built:
/// with none (an image without a CA bundle, here `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` pointing at nothing), `Client::new` panics with
/// reqwest's cause, which reqwest's own message leaves out, and what to do.
// Where reqwest reads the certificates when a client is built: not on
// Apple's systems or Windows, whose own verifiers it asks at each handshake.
#[cfg(target_os = "linux")]
#[test]
fn a_system_without_ca_certificates_is_named_when_the_client_is_built() {
    let run = support::child::run_fixture(
        "fixtures::builds_a_client",
        &support::child::NO_CA_CERTIFICATES,
    );

    assert!(!run.success, "{run:?}");
    assert!(
        run.stderr
            .contains("No CA certificates were loaded from the system"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("`ca-certificates`"), "{}", run.stderr);
}

/// Tests run as child processes by the tests above; `#[ignore]`d so that a
/// normal run skips them.
mod fixtures {
    use super::*;

    #[test]
    #[ignore = "a fixture: run as a child process by the tests above"]
    fn builds_a_client() {
        drop(client());
    }
}
