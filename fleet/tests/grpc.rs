//! The gRPC layers in process: tonic over an in-memory connection, on the
//! paused clock.

mod support;

#[path = "../../tests/support/drain.rs"]
mod drain;
#[allow(dead_code, unreachable_pub)] // this file reads only some of it
#[path = "../../tests/support/logs.rs"]
mod logs;

use std::time::Duration;

use futures_util::StreamExt;
use timebox::config::{Config, MethodTimeout};
use timebox::deadline::{is_deadline_exceeded, Deadline};
use timebox::grpc::GrpcDeadlineLayer;
use timebox::observe::{Event, Recording};
use timebox::registry::CancelReason;
use timebox::shutdown::Shutdown;
use timebox_fleet::pb::relay_client::RelayClient;
use timebox_fleet::pb::relay_server::RelayServer;
use timebox_fleet::pb::{ForwardRequest, WaitRequest};
use tokio::time::Instant;
use tonic::{Code, Request, Status};

use support::{client, connect, raw_call, serve, serve_io, silent, Probe, Seen, HOP};

const MS: fn(u64) -> Duration = Duration::from_millis;
const SECS: fn(u64) -> Duration = Duration::from_secs;
const US: fn(u64) -> Duration = Duration::from_micros;

/// The `DeadlineExceeded` events `recording` heard.
fn exceeded_events(recording: &Recording) -> Vec<Event> {
    events_where(recording, |event| {
        matches!(event, Event::DeadlineExceeded { .. })
    })
}

/// The `RequestCancelled` events `recording` heard.
fn cancelled_events(recording: &Recording) -> Vec<Event> {
    events_where(recording, |event| {
        matches!(event, Event::RequestCancelled { .. })
    })
}

fn events_where(recording: &Recording, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
    recording.events().into_iter().filter(wanted).collect()
}

fn wait(millis: u64) -> WaitRequest {
    WaitRequest { millis }
}

fn with_method(method: &str, timeout: MethodTimeout) -> Config {
    let mut config = Config::default();
    config
        .server
        .grpc
        .methods
        .insert(method.to_owned(), timeout);
    config.validate().expect("a valid config");
    config
}

/// The `grpc-status` and `grpc-message` of a Trailers-Only answer.
fn trailers_only<B>(response: &http::Response<B>) -> (&str, &str) {
    let header = |name| {
        response
            .headers()
            .get(name)
            .map_or("", |value| value.to_str().unwrap())
    };
    (header("grpc-status"), header("grpc-message"))
}

// tonic's own channel enforces a `grpc-timeout` it sends, so the server's
// answer is checked with a client that enforces nothing.
#[tokio::test(start_paused = true)]
async fn a_call_past_its_grpc_timeout_gets_deadline_exceeded_and_its_handler_is_dropped() {
    let probe = Probe::default();
    let io = serve_io(
        probe.clone(),
        Some(GrpcDeadlineLayer::server(&Config::default())),
    );
    let start = Instant::now();
    let response = raw_call(
        io,
        "/fleet.Relay/Wait",
        &[("grpc-timeout", "300m")],
        wait(2000),
    )
    .await;
    // Counted from a millisecond before the layer read the clock, just
    // before tonic's own timer for the header started.
    assert_eq!(start.elapsed(), MS(299));
    assert_eq!(response.status(), 200);
    assert_eq!(
        trailers_only(&response),
        (
            "4",
            "deadline%20of%20300%20ms%20from%20the%20grpc-timeout%20header%20exceeded"
        )
    );
    assert_eq!(probe.dropped(), 1, "the handler was dropped");
}

/// A layer before timebox's that takes a tick of tokio's timer to forward
/// a call: tonic's own timer for the call's `grpc-timeout`, started as this
/// layer's `call` returned, a tick before timebox's reads the clock, fires
/// first.
#[derive(Clone)]
struct ForwardsAfterATick<S>(S);

impl<S, B> tower::Service<http::Request<B>> for ForwardsAfterATick<S>
where
    S: tower::Service<http::Request<B>> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let ready = self.0.clone();
        let mut inner = std::mem::replace(&mut self.0, ready);
        Box::pin(async move {
            tokio::time::sleep(MS(1)).await;
            inner.call(request).await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn tonics_own_timer_does_not_answer_before_the_layer() {
    let probe = Probe::default();
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let incoming = futures_util::stream::iter([Ok::<_, std::io::Error>(server_io)]);
    let service = RelayServer::new(probe.clone());
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(tower::layer::layer_fn(ForwardsAfterATick))
            .layer(GrpcDeadlineLayer::server(&Config::default()))
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    let response = raw_call(
        client_io,
        "/fleet.Relay/Wait",
        &[("grpc-timeout", "20m")],
        wait(2000),
    )
    .await;
    assert_eq!(
        trailers_only(&response),
        (
            "4",
            "deadline%20of%2020%20ms%20from%20the%20grpc-timeout%20header%20exceeded"
        ),
        "timebox's answer, not tonic's CANCELLED"
    );
    assert_eq!(probe.dropped(), 1, "the handler was dropped");
}

/// A `grpc-timeout` of zero, or one no longer than the millisecond the
/// layer counts it ahead of tonic's own timer, is spent on arrival.
#[tokio::test(start_paused = true)]
async fn a_grpc_timeout_spent_on_arrival_is_answered_without_running_the_handler() {
    for timeout in ["0n", "1m", "500u"] {
        let recording = Recording::new();
        let config = Config::default().observed_by(recording.clone());
        let probe = Probe::default();
        let io = serve_io(probe.clone(), Some(GrpcDeadlineLayer::server(&config)));
        let response = raw_call(
            io,
            "/fleet.Relay/Wait",
            &[("grpc-timeout", timeout)],
            wait(0),
        )
        .await;
        assert_eq!(trailers_only(&response).0, "4", "{timeout}");
        assert_eq!(probe.calls(), 0, "{timeout}");
        // Spent on arrival: told at admission, as the handler never ran.
        assert_eq!(
            exceeded_events(&recording),
            [Event::DeadlineExceeded {
                stage: timebox::observe::Stage::Admission,
                route: Some("other".into()),
            }],
            "{timeout}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_accepted_deadline_header_shortens_the_call_and_is_named() {
    let mut config = Config::default();
    config.server.timeouts.accept_deadline_header = true;
    let io = serve_io(Probe::default(), Some(GrpcDeadlineLayer::server(&config)));
    let start = Instant::now();
    let headers = [("grpc-timeout", "5S"), ("x-timebox-deadline-ms", "120")];
    let response = raw_call(io, "/fleet.Relay/Wait", &headers, wait(2000)).await;
    assert_eq!(start.elapsed(), MS(120));
    assert!(trailers_only(&response).1.contains("x-timebox-deadline-ms"));
}

/// I2 with I5: a mesh proxy's header that `server.timeouts.deadline_headers`
/// trusts shortens the call as timebox's own does.
#[tokio::test(start_paused = true)]
async fn an_accepted_mesh_header_shortens_the_call_and_is_named() {
    let mut config = Config::default();
    config.server.timeouts.accept_deadline_header = true;
    config.server.timeouts.deadline_headers = vec!["x-envoy-expected-rq-timeout-ms".to_owned()];
    let io = serve_io(Probe::default(), Some(GrpcDeadlineLayer::server(&config)));
    let start = Instant::now();
    let headers = [
        ("grpc-timeout", "5S"),
        ("x-timebox-deadline-ms", "60"),
        ("x-envoy-expected-rq-timeout-ms", "120"),
    ];
    let response = raw_call(io, "/fleet.Relay/Wait", &headers, wait(2000)).await;
    // timebox's own header is not in the list: it is not trusted.
    assert_eq!(start.elapsed(), MS(120));
    assert!(trailers_only(&response)
        .1
        .contains("x-envoy-expected-rq-timeout-ms"));
}

#[tokio::test(start_paused = true)]
async fn a_method_deadline_from_the_config_applies_without_a_header() {
    let config = with_method("/fleet.Relay/Wait", MethodTimeout::Millis(250));
    let probe = Probe::default();
    let channel = serve(probe.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let start = Instant::now();
    let status = RelayClient::new(channel)
        .wait(wait(2000))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(start.elapsed(), MS(250));
    assert!(
        status
            .message()
            .contains(r#"server.grpc.methods."/fleet.Relay/Wait""#),
        "{status:?}"
    );
    assert_eq!(probe.dropped(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_default_applies_to_other_methods_and_off_turns_it_off() {
    let mut config = with_method("/fleet.Relay/Wait", MethodTimeout::Off);
    config.server.grpc.default_timeout_ms = Some(400);
    let probe = Probe::default();
    let channel = serve(probe.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let mut relay = RelayClient::new(channel);

    let reply = relay.wait(wait(1000)).await.expect("no deadline on Wait");
    assert_eq!(reply.into_inner().deadline_ms, -1);

    let start = Instant::now();
    let mut ticks = relay
        .ticks(wait(100))
        .await
        .expect("the stream opens")
        .into_inner();
    while let Some(Ok(_)) = ticks.next().await {}
    assert_eq!(start.elapsed(), MS(400), "the default covers the stream");
}

#[tokio::test(start_paused = true)]
async fn a_callers_grpc_timeout_still_counts_under_off() {
    let config = with_method("/fleet.Relay/Wait", MethodTimeout::Off);
    let io = serve_io(Probe::default(), Some(GrpcDeadlineLayer::server(&config)));
    let start = Instant::now();
    let response = raw_call(
        io,
        "/fleet.Relay/Wait",
        &[("grpc-timeout", "200m")],
        wait(1000),
    )
    .await;
    assert_eq!(start.elapsed(), MS(199));
    assert_eq!(trailers_only(&response).0, "4");
}

/// I2, O1: a stream whose deadline passes after its head ends with
/// `DEADLINE_EXCEEDED` in its trailers, told at the `stream` stage.
#[tokio::test(start_paused = true)]
async fn a_streamed_response_ends_with_deadline_exceeded_in_its_trailers() {
    let recording = timebox::observe::Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let channel = serve(Probe::default(), Some(GrpcDeadlineLayer::server(&config))).await;
    let mut request = Request::new(wait(300));
    request.set_timeout(MS(1000));
    let mut ticks = RelayClient::new(channel)
        .ticks(request)
        .await
        .expect("the stream opens")
        .into_inner();
    let mut received = 0;
    let end = loop {
        match ticks.next().await {
            Some(Ok(_)) => received += 1,
            Some(Err(status)) => break status,
            None => panic!("the stream ended without a status"),
        }
    };
    assert_eq!(received, 3, "ticks at 300, 600 and 900 ms");
    assert_eq!(end.code(), Code::DeadlineExceeded, "{end:?}");
    let exceeded: Vec<_> = exceeded_events(&recording);
    assert_eq!(
        exceeded,
        [timebox::observe::Event::DeadlineExceeded {
            stage: timebox::observe::Stage::Stream,
            // A method with no rule of its own is labelled `other`.
            route: Some("other".into()),
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_shrinks_at_every_hop() {
    let config = Config::default();
    let leaf = Probe::default();
    let leaf_channel = serve(leaf.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let relay = Probe {
        next: Some(client(&config, leaf_channel)),
        ..Probe::default()
    };
    let relay_channel = serve(relay.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let mut front = client(&config, relay_channel);

    let deadline = Deadline::after(MS(1500));
    let reply = deadline
        .scope(async {
            tokio::time::sleep(HOP).await;
            front.forward(ForwardRequest {}).await
        })
        .await
        .expect("every hop has time")
        .into_inner();
    // Each server counts a `grpc-timeout` from a millisecond before it read
    // the clock, just before tonic's own timer for it started.
    assert_eq!(reply.relay_deadline_ms, 1399, "the front spent {HOP:?}");
    assert_eq!(reply.leaf_deadline_ms, 1298, "the relay spent {HOP:?}");
    let seen = &relay.seen.lock().unwrap()[0];
    assert_eq!(seen.grpc_timeout, ["1400m"], "one value");
    assert_eq!(seen.deadline_ms, ["1400"], "one value");
    let seen = &leaf.seen.lock().unwrap()[0];
    assert_eq!(seen.grpc_timeout, ["1299m"]);
    assert_eq!(seen.deadline_ms, ["1299"]);
}

#[tokio::test(start_paused = true)]
async fn a_shorter_timeout_the_caller_set_is_kept_and_sent_once() {
    let config = Config::default();
    let probe = Probe::default();
    let mut relay = client(&config, serve(probe.clone(), None).await);
    let mut request = Request::new(wait(0));
    request.set_timeout(MS(200));
    Deadline::after(MS(1500))
        .scope(relay.wait(request))
        .await
        .expect("the call succeeds");
    let seen = &probe.seen.lock().unwrap()[0];
    assert_one_deadline_of(seen, 200);
    assert_eq!(seen.grpc_timeout, ["200000u"], "as tonic wrote it");
}

/// I3 with C3: a shorter `x-timebox-deadline-ms` the caller put in the
/// metadata is kept as well, and the `grpc-timeout` says the same time.
#[tokio::test(start_paused = true)]
async fn a_shorter_deadline_header_the_caller_set_is_kept_and_sent_once() {
    let config = Config::default();
    let probe = Probe::default();
    let mut relay = client(&config, serve(probe.clone(), None).await);
    let mut request = Request::new(wait(0));
    request
        .metadata_mut()
        .insert("x-timebox-deadline-ms", "0200".parse().unwrap());
    Deadline::after(MS(1500))
        .scope(relay.wait(request))
        .await
        .expect("the call succeeds");
    let seen = &probe.seen.lock().unwrap()[0];
    assert_eq!(seen.deadline_ms, ["0200"], "as the caller wrote it");
    assert_eq!(seen.grpc_timeout, ["200m"]);
}

/// I3 with C3: a deadline the caller set on the request that is longer
/// than the time left grants nothing: the call goes out with what is left,
/// one value of each.
#[tokio::test(start_paused = true)]
async fn a_longer_deadline_the_caller_set_is_cut_to_the_time_left() {
    assert_sent_with_the_time_left([("x-timebox-deadline-ms", "5000"), ("grpc-timeout", "5S")])
        .await;
}

/// I3 with I5: each header in `http.client.deadline_headers` goes out once,
/// saying the same time as the `grpc-timeout`.
#[tokio::test(start_paused = true)]
async fn a_listed_mesh_header_goes_out_once_beside_the_grpc_timeout() {
    let mut config = Config::default();
    config.http.client.deadline_headers = vec![
        "x-timebox-deadline-ms".to_owned(),
        "x-envoy-upstream-rq-timeout-ms".to_owned(),
    ];
    let seen = seen_of_a_call_under_1500_ms(&config).await;
    assert_eq!(seen.envoy_timeout_ms, ["1500"], "{seen:?}");
    assert_one_deadline_of(&seen, 1500);
}

/// What a peer saw of one call under a deadline of 1 500 ms, through a
/// client layer built from `config`.
async fn seen_of_a_call_under_1500_ms(config: &Config) -> Seen {
    let probe = Probe::default();
    let mut relay = client(config, serve(probe.clone(), None).await);
    Deadline::after(MS(1500))
        .scope(relay.wait(wait(0)))
        .await
        .expect("the call succeeds");
    let seen = probe.seen.lock().unwrap()[0].clone();
    seen
}

/// I3: `x-timebox-deadline-ms` goes out only when `send_deadline_header`
/// says so; the `grpc-timeout` always does.
#[tokio::test(start_paused = true)]
async fn without_send_deadline_header_only_the_grpc_timeout_goes_out() {
    let mut config = Config::default();
    config.http.client.send_deadline_header = false;
    let seen = seen_of_a_call_under_1500_ms(&config).await;
    assert!(seen.deadline_ms.is_empty(), "{seen:?}");
    assert_eq!(seen.grpc_timeout, ["1500m"], "{seen:?}");
}

#[tokio::test(start_paused = true)]
async fn an_expired_deadline_sends_nothing() {
    let probe = Probe::default();
    let mut relay = client(&Config::default(), serve(probe.clone(), None).await);
    let deadline = Deadline::after(MS(100));
    tokio::time::sleep(MS(100)).await;
    let status = deadline.scope(relay.wait(wait(0))).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(is_deadline_exceeded(&status), "{status:?}");
    assert_eq!(probe.calls(), 0, "nothing was sent");
}

/// A call under a 1 s deadline whose request carries `name: value`.
async fn call_with_header(
    relay: &mut support::Client,
    name: &'static str,
    value: &str,
) -> Result<(), Status> {
    let mut request = Request::new(wait(0));
    request
        .metadata_mut()
        .insert(name, value.parse().expect("a valid metadata value"));
    Deadline::after(MS(1000))
        .scope(relay.wait(request))
        .await
        .map(drop)
}

/// Asserts that `seen` carried one `x-timebox-deadline-ms` and one
/// `grpc-timeout`, each saying `ms` milliseconds.
fn assert_one_deadline_of(seen: &Seen, ms: u64) {
    assert_eq!(seen.deadline_ms, [ms.to_string()], "{seen:?}");
    assert_eq!(seen.grpc_timeout.len(), 1, "{seen:?}");
    assert_eq!(
        timebox::grpc::timeout::parse(&seen.grpc_timeout[0]),
        Some(MS(ms)),
        "{seen:?}"
    );
}

/// I3: a deadline the caller set on the request that has already passed
/// (`0` in either format the client reads) fails locally as well, and does
/// not go out as a call with no deadline.
#[tokio::test(start_paused = true)]
async fn a_callers_own_deadline_of_zero_sends_nothing() {
    let probe = Probe::default();
    let mut relay = client(&Config::default(), serve(probe.clone(), None).await);
    for (name, value) in [("x-timebox-deadline-ms", "0"), ("grpc-timeout", "0m")] {
        let status = call_with_header(&mut relay, name, value)
            .await
            .expect_err("the call fails");
        assert_eq!(status.code(), Code::DeadlineExceeded, "{name}");
        assert!(is_deadline_exceeded(&status), "{name}: {status:?}");
        assert_eq!(
            status.message(),
            format!("deadline of 0 ms from the {name} header exceeded")
        );
    }
    assert_eq!(probe.calls(), 0, "nothing was sent");
}

/// I3 with C3: a deadline header the caller set on the request that does
/// not parse grants nothing, as on a request a server receives: the call
/// goes out with the layer's values, one of each (a `warn!` line names the
/// header).
#[tokio::test(start_paused = true)]
async fn a_callers_own_deadline_that_does_not_parse_is_replaced() {
    assert_sent_with_the_time_left([("x-timebox-deadline-ms", "1.5s"), ("grpc-timeout", "5s")])
        .await;
}

/// Makes a call under a 1 s deadline with each of `headers` set by the
/// caller, and asserts that each went out with the 1 000 ms left, one value
/// of each.
async fn assert_sent_with_the_time_left(headers: [(&'static str, &str); 2]) {
    let probe = Probe::default();
    let mut relay = client(&Config::default(), serve(probe.clone(), None).await);
    for (name, value) in headers {
        call_with_header(&mut relay, name, value)
            .await
            .expect("the call succeeds");
    }
    for seen in probe.seen.lock().unwrap().iter() {
        assert_one_deadline_of(seen, 1000);
    }
    assert_eq!(probe.calls(), 2);
}

/// I3: the layer ends the call at the caller's deadline itself, whatever
/// lies under it (here a service with no timer, that never answers), and
/// drops the call.
#[tokio::test(start_paused = true)]
async fn the_client_ends_the_call_at_the_callers_deadline() {
    let probe = Probe::default();
    let peer = {
        let probe = probe.clone();
        tower::service_fn(
            move |_: http::Request<http_body_util::Empty<bytes::Bytes>>| {
                let unfinished = probe.begun();
                async move {
                    let _unfinished = unfinished;
                    std::future::pending::<
                        Result<http::Response<http_body_util::Empty<bytes::Bytes>>, std::io::Error>,
                    >()
                    .await
                }
            },
        )
    };
    let start = Instant::now();
    let call = called_through_the_layer(peer, Deadline::after(MS(700)));
    let err = tokio::time::timeout(SECS(5), call)
        .await
        .expect("the layer ends the call")
        .expect_err("the call fails");
    assert_eq!(start.elapsed(), MS(700));
    assert_deadline_status(err);
    assert_eq!(probe.dropped(), 1, "the call was dropped");
}

/// A channel with room for one request, whose connection never opens,
/// made full: one request its worker holds, waiting for the connection,
/// and one in the room (both on tasks that wait for good).
async fn full_channel() -> tonic::transport::Channel {
    let channel = tonic::transport::Endpoint::from_static("http://never-connects")
        .buffer_size(1)
        .connect_with_connector_lazy(tower::service_fn(|_: http::Uri| {
            std::future::pending::<
                Result<hyper_util::rt::TokioIo<tokio::io::DuplexStream>, std::io::Error>,
            >()
        }));
    for _ in 0..2 {
        let mut holder = client(&Config::default(), channel.clone());
        tokio::spawn(async move { holder.wait(wait(0)).await });
        tokio::task::yield_now().await;
    }
    channel
}

/// I3: the wait for a channel that is not ready counts against the
/// deadline too. A channel with room for one request, whose connection
/// never opens: once it is full, a call waits for room, and ends at its
/// deadline, never sent.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_a_full_channel_ends_at_the_callers_deadline() {
    let channel = full_channel().await;
    let mut second = client(&Config::default(), channel);
    let start = Instant::now();
    let status = tokio::time::timeout(
        SECS(5),
        Deadline::after(MS(200)).scope(second.wait(wait(0))),
    )
    .await
    .expect("the wait for the channel ends at the deadline")
    .unwrap_err();
    assert_eq!(start.elapsed(), MS(200));
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(is_deadline_exceeded(&status), "{status:?}");
    assert!(status.message().contains("not sent"), "{status:?}");
}

/// The readiness a passed deadline gave is that deadline's: asked again
/// with none, the service waits for its channel again.
#[tokio::test(start_paused = true)]
async fn readiness_a_passed_deadline_gave_is_not_kept_for_a_later_caller() {
    use tower::{Layer, ServiceExt};

    let channel = full_channel().await;
    let mut service = GrpcDeadlineLayer::client(&Config::default()).layer(channel);
    Deadline::after(MS(10))
        .scope(ServiceExt::<http::Request<tonic::body::Body>>::ready(
            &mut service,
        ))
        .await
        .expect("ready, as the deadline passed");
    let later = tokio::time::timeout(
        SECS(1),
        ServiceExt::<http::Request<tonic::body::Body>>::ready(&mut service),
    )
    .await;
    assert!(later.is_err(), "still waiting for the full channel");
}

/// A call through the client layer, under a deadline of 1000.5 ms, to a
/// peer that answers with `answer` at `at`. The header says whole
/// milliseconds, rounded down, so `1000m` goes out and the time sent runs
/// out half a millisecond before the caller's deadline: an answer at
/// 1000.2 ms comes between the two. The peer is not tonic (tonic's channel
/// would end the call itself at the timeout), so its own answer is what
/// the layer reads.
async fn answered_at<B>(
    at: Duration,
    answer: impl FnOnce() -> Result<http::Response<B>, std::io::Error> + Send + 'static,
) -> Result<http::Response<timebox::grpc::GrpcBody<B>>, timebox::grpc::BoxError>
where
    B: hyper::body::Body + Send + 'static,
{
    let (go, told_to_answer) = tokio::sync::oneshot::channel::<()>();
    let mut pending = Some((told_to_answer, answer));
    let peer = tower::service_fn(
        move |request: http::Request<http_body_util::Empty<bytes::Bytes>>| {
            assert_eq!(request.headers()["grpc-timeout"], "1000m");
            let (told_to_answer, answer) = pending.take().expect("one call");
            async move {
                told_to_answer.await.expect("the test says when");
                answer()
            }
        },
    );
    let call = called_through_the_layer(peer, Deadline::after(MS(1000) + US(500)));
    let (result, ()) = tokio::join!(call, async {
        tokio::time::advance(at).await;
        go.send(()).expect("the call waits for its answer");
    });
    result
}

/// A call of `fleet.Relay/Wait` to `peer` through the client layer, under
/// `deadline`.
async fn called_through_the_layer<S, B>(
    peer: S,
    deadline: Deadline,
) -> Result<http::Response<timebox::grpc::GrpcBody<B>>, timebox::grpc::BoxError>
where
    S: tower::Service<
        http::Request<http_body_util::Empty<bytes::Bytes>>,
        Response = http::Response<B>,
    >,
    S::Error: Into<timebox::grpc::BoxError>,
{
    use tower::ServiceExt;

    let layered = tower::ServiceBuilder::new()
        .layer(GrpcDeadlineLayer::client(&Config::default()))
        .service(peer);
    let request = http::Request::post("http://peer/fleet.Relay/Wait")
        .body(http_body_util::Empty::new())
        .unwrap();
    deadline.scope(layered.oneshot(request)).await
}

/// I3: a deadline the caller set with none current is capped as every
/// deadline is, at 30 years: not the 584 million years that a `u64` of
/// milliseconds says, which some platforms' clocks cannot hold.
#[tokio::test(start_paused = true)]
async fn a_callers_deadline_beyond_any_clock_is_capped() {
    use tower::ServiceExt;

    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let peer = {
        let seen = seen.clone();
        tower::service_fn(
            move |_: http::Request<http_body_util::Empty<bytes::Bytes>>| {
                let seen = seen.clone();
                async move {
                    *seen.lock().unwrap() = Deadline::current();
                    Ok::<_, std::io::Error>(
                        Status::new(Code::Ok, "")
                            .into_http::<http_body_util::Empty<bytes::Bytes>>(),
                    )
                }
            },
        )
    };
    let layered = tower::ServiceBuilder::new()
        .layer(GrpcDeadlineLayer::client(&Config::default()))
        .service(peer);
    let request = http::Request::post("http://peer/fleet.Relay/Wait")
        .header("x-timebox-deadline-ms", u64::MAX.to_string())
        .body(http_body_util::Empty::new())
        .unwrap();
    let start = Instant::now();
    layered.oneshot(request).await.expect("the peer answers");
    let deadline = seen
        .lock()
        .unwrap()
        .expect("the call's deadline is current");
    let thirty_one_years = Duration::from_secs(31 * 365 * 24 * 3600);
    assert!(deadline.instant() <= start + thirty_one_years);
}

/// After the time sent ran out, before the caller's deadline.
const BETWEEN: Duration = Duration::from_micros(1_000_200);

/// A peer's own `CANCELLED`, as a Trailers-Only answer.
fn peer_gave_up() -> Result<http::Response<http_body_util::Empty<bytes::Bytes>>, std::io::Error> {
    Ok(Status::cancelled("the peer gave up").into_http())
}

/// What a stream the peer reset, or a dropped connection, fails with.
fn stream_reset() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "stream reset by the peer",
    )
}

/// Asserts that a call failed with timebox's own deadline status.
fn assert_deadline_status(err: timebox::grpc::BoxError) {
    let status = *err
        .downcast::<Status>()
        .unwrap_or_else(|err| panic!("the layer fails with a status, not {err:?}"));
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(is_deadline_exceeded(&status));
}

/// I3: a `CANCELLED` that comes once the `grpc-timeout` sent has run out
/// is the deadline's.
#[tokio::test(start_paused = true)]
async fn a_cancelled_that_comes_after_the_time_sent_is_reported_as_deadline_exceeded() {
    let err = answered_at(BETWEEN, peer_gave_up)
        .await
        .expect_err("the call fails");
    assert_deadline_status(err);
}

/// I3: so is an `UNAVAILABLE` then: a proxy that timed the call out by a
/// header it was sent (Envoy's "upstream request timeout", its 504 as gRPC
/// maps it).
#[tokio::test(start_paused = true)]
async fn a_proxys_unavailable_after_the_time_sent_is_reported_as_deadline_exceeded() {
    let err = answered_at(BETWEEN, || {
        Ok::<_, std::io::Error>(
            Status::unavailable("upstream request timeout")
                .into_http::<http_body_util::Empty<bytes::Bytes>>(),
        )
    })
    .await
    .expect_err("the call fails");
    assert_deadline_status(err);
}

/// I3: an `UNAVAILABLE` before then is the peer's, kept as it said it.
#[tokio::test(start_paused = true)]
async fn an_unavailable_before_the_time_sent_is_the_peers_own() {
    let response = answered_at(MS(999), || {
        Ok::<_, std::io::Error>(
            Status::unavailable("no backend").into_http::<http_body_util::Empty<bytes::Bytes>>(),
        )
    })
    .await
    .expect("the peer's answer, as it came");
    assert_eq!(trailers_only(&response), ("14", "no%20backend"));
}

/// I3: so is a reset stream (or a dropped connection): the call's error,
/// once the time sent has run out, is the deadline.
#[tokio::test(start_paused = true)]
async fn a_reset_stream_after_the_time_sent_is_reported_as_deadline_exceeded() {
    let err = answered_at(BETWEEN, || {
        Err::<http::Response<http_body_util::Empty<bytes::Bytes>>, _>(stream_reset())
    })
    .await
    .expect_err("the call fails");
    assert_deadline_status(err);
}

/// I3: and so is a stream reset while the response's body is read.
#[tokio::test(start_paused = true)]
async fn a_body_reset_after_the_time_sent_is_reported_as_deadline_exceeded() {
    use http_body_util::BodyExt;

    let (reset, told_to_reset) = tokio::sync::oneshot::channel::<()>();
    let response = answered_at(BETWEEN, move || {
        let frames = futures_util::stream::once(async move {
            told_to_reset.await.expect("the test says when");
            Err::<hyper::body::Frame<bytes::Bytes>, _>(stream_reset())
        });
        Ok(http::Response::new(http_body_util::StreamBody::new(frames)))
    })
    .await
    .expect("the response's head came in time");
    reset.send(()).expect("the body waits for its frame");
    let err = std::pin::pin!(response.into_body())
        .frame()
        .await
        .expect("a frame or an error")
        .expect_err("the body fails");
    assert_deadline_status(err);
}

/// I3: a `CANCELLED` before the time sent has run out is the peer's own,
/// kept as it said it.
#[tokio::test(start_paused = true)]
async fn a_cancelled_before_the_time_sent_is_the_peers_own() {
    let response = answered_at(MS(999), peer_gave_up)
        .await
        .expect("the peer's answer, as it came");
    assert_eq!(trailers_only(&response), ("1", "the%20peer%20gave%20up"));
}

/// I3: tonic's channel ends a call at the `grpc-timeout` it sends, with
/// an error of its own (its client says CANCELLED "Timeout expired"); that
/// is the caller's deadline too. The time sent is whole milliseconds, so
/// tonic's timer (300 ms) fires before the layer's own gate (300.5 ms);
/// the server has no timer that could answer first.
#[tokio::test(start_paused = true)]
async fn tonics_own_timeout_at_the_time_sent_is_reported_as_deadline_exceeded() {
    let mut relay = client(&Config::default(), silent().await);
    let start = Instant::now();
    let status = Deadline::after(MS(300) + US(500))
        .scope(relay.wait(wait(5000)))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), MS(300), "tonic's timer, not the gate");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(is_deadline_exceeded(&status));
}

/// The same with a shorter `grpc-timeout` the caller set: the status
/// names it.
#[tokio::test(start_paused = true)]
async fn a_shorter_timeout_the_caller_set_is_named_when_it_passes() {
    let mut relay = client(&Config::default(), serve(Probe::default(), None).await);
    let mut request = Request::new(wait(5000));
    request.set_timeout(MS(300));
    let start = Instant::now();
    let status = Deadline::after(MS(1000))
        .scope(relay.wait(request))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), MS(300));
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status.message(),
        "deadline of 300 ms from the grpc-timeout header exceeded"
    );
}

/// C3, I3: a shorter `grpc-timeout` the caller set is the call's deadline,
/// under a longer deadline and with none current alike: it ends a stream
/// that tonic's own timer (which covers the response's head only) lets
/// run, and the status names it.
#[tokio::test(start_paused = true)]
async fn a_shorter_timeout_the_caller_set_ends_the_stream_and_is_named() {
    for current in [Some(SECS(5)), None] {
        let mut relay = client(&Config::default(), serve(Probe::default(), None).await);
        let mut request = Request::new(wait(100));
        request.set_timeout(MS(250));
        let start = Instant::now();
        let streamed = async {
            let mut ticks = relay.ticks(request).await?.into_inner();
            while ticks.message().await?.is_some() {}
            Ok::<_, Status>(())
        };
        let streamed = async {
            match current {
                Some(current) => Deadline::after(current).scope(streamed).await,
                None => streamed.await,
            }
        };
        // Not the deadline under test: a stream that the caller's timeout
        // did not end fails the test instead of running for ever.
        let status = tokio::time::timeout(SECS(60), streamed)
            .await
            .expect("the caller's timeout ends the stream")
            .unwrap_err();
        assert_eq!(start.elapsed(), MS(250), "{current:?}");
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert!(is_deadline_exceeded(&status), "{status:?}");
        assert_eq!(
            status.message(),
            "deadline of 250 ms from the grpc-timeout header exceeded"
        );
    }
}

/// I4, O1: a peer's own `DEADLINE_EXCEEDED`, long before the caller's
/// deadline, carries timebox's source, keeps the peer's message, and is
/// not told as the caller's deadline passing.
#[tokio::test(start_paused = true)]
async fn a_deadline_exceeded_from_the_peer_carries_timeboxs_source() {
    let probe = Probe {
        wait_answer: Some(|| Status::deadline_exceeded("the peer's own deadline")),
        ..Probe::default()
    };
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let mut relay = client(&config, serve(probe, None).await);
    let status = Deadline::after(MS(1000))
        .scope(relay.wait(wait(10)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(is_deadline_exceeded(&status), "{status:?}");
    assert_eq!(status.message(), "the peer's own deadline");
    let exceeded: Vec<Event> = exceeded_events(&recording);
    assert_eq!(exceeded, Vec::<Event>::new());
}

/// I3, O1: a timebox server answers the `grpc-timeout` it was sent a
/// millisecond early, so that its answer beats tonic's own: that answer is
/// still the caller's deadline passing, not a deadline of the peer's own.
#[tokio::test(start_paused = true)]
async fn a_timebox_servers_answer_to_the_time_sent_is_the_callers_deadline() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let layer = GrpcDeadlineLayer::server(&Config::default());
    let mut relay = client(&config, serve(Probe::default(), Some(layer)).await);
    let status = Deadline::after(MS(300))
        .scope(relay.wait(wait(2000)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status.message(),
        "deadline of 300 ms from the caller's deadline exceeded"
    );
    let exceeded: Vec<Event> = exceeded_events(&recording);
    assert_eq!(
        exceeded,
        [Event::DeadlineExceeded {
            stage: timebox::observe::Stage::Outbound,
            route: None,
        }]
    );
}

/// I4, O1: the same for a stream the peer ends at its own method's
/// deadline, in its trailers.
#[tokio::test(start_paused = true)]
async fn a_stream_the_peer_ends_at_its_own_deadline_keeps_the_peers_status() {
    let server = with_method("/fleet.Relay/Ticks", MethodTimeout::Millis(250));
    let layer = GrpcDeadlineLayer::server(&server);
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let mut relay = client(&config, serve(Probe::default(), Some(layer)).await);
    let status = Deadline::after(SECS(5))
        .scope(async {
            let mut ticks = relay.ticks(wait(100)).await?.into_inner();
            while ticks.message().await?.is_some() {}
            Ok::<_, Status>(())
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(is_deadline_exceeded(&status), "{status:?}");
    assert!(
        status.message().contains("250 ms"),
        "the peer's own message: {status:?}"
    );
    assert_eq!(
        exceeded_events(&recording),
        [],
        "the caller's deadline did not pass"
    );
}

/// Reads the relay's ticks, a second apart, for as long as its route's
/// 300 ms allow.
#[timebox::get("/collect", timeout_ms = 300)]
async fn collect(axum::extract::State(mut relay): axum::extract::State<support::Client>) -> String {
    let Ok(response) = relay.ticks(wait(1000)).await else {
        return "no stream".to_owned();
    };
    let mut ticks = response.into_inner();
    let mut read = 0;
    while let Ok(Some(_)) = ticks.message().await {
        read += 1;
    }
    format!("{read} ticks")
}

/// O1: a route's deadline that passes while the handler waits for the next
/// message of a stream it reads through the client layer is told at the
/// `outbound` stage, as one that passes while it waits for an answer.
#[tokio::test(start_paused = true)]
async fn a_deadline_that_passes_while_a_stream_is_read_is_told_at_the_outbound_stage() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let relay = client(&config, serve(Probe::default(), None).await);
    let router = timebox::routes![collect]
        .into_router(&config)
        .with_state(relay);
    answered_503_told_outbound(router, &recording, "/collect").await;
}

/// Asserts that a GET of `path` from `router` ends with the route's 503,
/// and that the deadline was told once, at the `outbound` stage.
async fn answered_503_told_outbound(router: axum::Router, recording: &Recording, path: &str) {
    use tower::ServiceExt;

    let request = http::Request::get(path).body(axum::body::Body::empty());
    let response = router.oneshot(request.unwrap()).await.unwrap();
    assert_eq!(response.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        exceeded_events(recording),
        [Event::DeadlineExceeded {
            stage: timebox::observe::Stage::Outbound,
            route: Some(path.into()),
        }]
    );
}

/// Calls the relay, for as long as its route's 300 ms allow.
#[timebox::get("/relay", timeout_ms = 300)]
async fn call_relay(axum::extract::State(mut relay): axum::extract::State<support::Client>) {
    let _ = relay.wait(wait(0)).await;
}

/// O1: so is one that passes while the handler waits for room in a full
/// channel.
#[tokio::test(start_paused = true)]
async fn a_deadline_that_passes_while_the_channel_is_full_is_told_at_the_outbound_stage() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let relay = client(&config, full_channel().await);
    let router = timebox::routes![call_relay]
        .into_router(&config)
        .with_state(relay);
    answered_503_told_outbound(router, &recording, "/relay").await;
}

#[tokio::test(start_paused = true)]
async fn without_a_deadline_the_client_sends_no_timeout() {
    let probe = Probe::default();
    let mut relay = client(&Config::default(), serve(probe.clone(), None).await);
    relay.wait(wait(10)).await.expect("the call succeeds");
    let seen = &probe.seen.lock().unwrap()[0];
    assert!(
        seen.grpc_timeout.is_empty() && seen.deadline_ms.is_empty(),
        "{seen:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn calls_count_in_flight_and_phase_one_refuses_new_ones() {
    let mut config = Config::default();
    config.server.prestop_grace_secs = 0;
    let shutdown = Shutdown::new(&config);
    let layer = GrpcDeadlineLayer::server(&config)
        .shutdown(&shutdown)
        .entropy(timebox::entropy::Entropy::seeded(3));
    let mut relay = RelayClient::new(serve(Probe::default(), Some(layer)).await);

    let mut in_flight = relay.clone();
    let started = Instant::now();
    let call = tokio::spawn(async move { in_flight.wait(wait(1000)).await });
    tokio::time::sleep(MS(10)).await;
    assert_eq!(shutdown.in_flight().count(), 1, "the call counts");

    shutdown.trigger();
    let drained = drain::in_background(&shutdown);
    shutdown.token().cancelled().await;
    let status = relay.wait(wait(0)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    let pushback: u64 = status
        .metadata()
        .get("grpc-retry-pushback-ms")
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .expect("a pushback");
    assert!((1000..=3000).contains(&pushback), "{pushback}");
    // Drawn from the layer's source, so a seeded app replays it.
    assert_eq!(
        pushback,
        timebox::entropy::Entropy::seeded(3).uniform(1000..=3000),
        "the seed's first draw"
    );

    call.await.unwrap().expect("the call in flight finishes");
    drained.await.unwrap();
    assert_eq!(
        Instant::now() - started,
        MS(1000),
        "the drain waited for the call"
    );
    assert_eq!(shutdown.in_flight().count(), 0);
}

/// O1: a call whose client gives up before its answer (a reset stream)
/// is told as cancelled for a disconnect, once its handler is dropped.
#[tokio::test(start_paused = true)]
async fn a_call_its_client_gives_up_on_is_told_as_a_disconnect() {
    // With no deadline of the server's, and under one it gates the call by.
    for rule in [MethodTimeout::Off, MethodTimeout::Millis(120_000)] {
        let recording = Recording::new();
        let config = with_method("/fleet.Relay/Wait", rule).observed_by(recording.clone());
        let shutdown = Shutdown::new(&config);
        let layer = GrpcDeadlineLayer::server(&config).shutdown(&shutdown);
        let probe = Probe::default();
        let mut relay = RelayClient::new(serve(probe.clone(), Some(layer)).await);
        relay.wait(wait(0)).await.expect("an answered call");
        let gave_up = tokio::time::timeout(SECS(1), relay.wait(wait(60_000))).await;
        assert!(gave_up.is_err(), "the client gave up");
        tokio::time::timeout(SECS(1), async {
            while probe.dropped() == 0 {
                tokio::time::sleep(MS(1)).await;
            }
        })
        .await
        .expect("the handler is dropped");
        assert_eq!(
            cancelled_events(&recording),
            [Event::RequestCancelled {
                reason: CancelReason::Disconnect
            }],
            "{rule:?}"
        );
        assert!(exceeded_events(&recording).is_empty(), "{rule:?}");
        assert_eq!(shutdown.in_flight().count(), 0);
    }
}

/// G1: phase 2 ends streams, not answers: a unary call whose work ends
/// during phase 2 gets its answer, as an HTTP request does then.
#[tokio::test(start_paused = true)]
async fn a_unary_call_that_finishes_during_phase_two_gets_its_answer() {
    let mut config = Config::default();
    config.server.prestop_grace_secs = 0;
    config.server.shutdown_timeout_secs = 1;
    let shutdown = Shutdown::new(&config);
    let layer = GrpcDeadlineLayer::server(&config).shutdown(&shutdown);
    let probe = Probe::default();
    let mut relay = RelayClient::new(serve(probe.clone(), Some(layer)).await);
    let call = tokio::spawn(async move { relay.wait(wait(1500)).await });
    tokio::time::sleep(MS(10)).await;
    shutdown.trigger();
    let drained = drain::in_background(&shutdown);
    shutdown.drain_token().cancelled().await;
    call.await
        .unwrap()
        .expect("the answer made during phase 2 arrives");
    drained.await.unwrap();
    assert_eq!(probe.dropped(), 0);
    assert_eq!(shutdown.in_flight().count(), 0);
}

/// A tonic server with the server layer and `probe`'s service, on one
/// in-memory connection, its own shutdown signal at phase 1 as the module's
/// docs say: the shutdown, the server's task and the client's channel.
async fn tonic_until_phase_one(
    config: &Config,
    probe: &Probe,
) -> (
    Shutdown,
    tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    tonic::transport::Channel,
) {
    let shutdown = Shutdown::new(config);
    let layer = GrpcDeadlineLayer::server(config).shutdown(&shutdown);
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    // One connection, and no end to the listener: tonic shuts down when its
    // incoming stream ends.
    let incoming = futures_util::stream::iter([Ok::<_, std::io::Error>(server_io)])
        .chain(futures_util::stream::pending());
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(RelayServer::new(probe.clone()))
            .serve_with_incoming_shutdown(incoming, shutdown.token().cancelled_owned()),
    );
    (shutdown, server, connect(client_io).await)
}

/// Asserts that the tonic server of [`tonic_until_phase_one`] returns
/// cleanly, within a second.
async fn tonic_returns(server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>) {
    tokio::time::timeout(SECS(1), server)
        .await
        .expect("tonic's shutdown returns")
        .unwrap()
        .expect("the server stops cleanly");
}

/// G1, S13 for gRPC: tonic's shutdown set to phase 1, as the module's docs
/// say, sends the GOAWAY then: the call under way still finishes, and the
/// client's next call is not sent to this server (here it has nowhere
/// else to go: the in-memory server takes one connection).
#[tokio::test(start_paused = true)]
async fn at_phase_one_tonics_goaway_lets_the_call_under_way_finish_and_takes_no_new_one() {
    let mut config = with_method("/fleet.Relay/Wait", MethodTimeout::Off);
    config.server.prestop_grace_secs = 0;
    config.server.shutdown_timeout_secs = 10;
    let probe = Probe::default();
    let (shutdown, server, channel) = tonic_until_phase_one(&config, &probe).await;
    let mut relay = RelayClient::new(channel.clone());
    let call = tokio::spawn(async move { relay.wait(wait(1_000)).await });
    tokio::time::sleep(MS(10)).await;
    assert_eq!(probe.calls(), 1);

    shutdown.trigger();
    let drained = drain::in_background(&shutdown);
    tokio::time::sleep(MS(10)).await;
    let mut relay = RelayClient::new(channel);
    let next = tokio::time::timeout(MS(5_000), relay.wait(wait(1)))
        .await
        .expect("the next call fails, not waiting for a connection")
        .expect_err("the next call has no connection to go to");
    // Not the layer's phase-1 answer: the call never reached this server.
    assert!(
        next.metadata().get("grpc-retry-pushback-ms").is_none()
            && !next.message().contains("shutting down"),
        "{next:?}"
    );
    assert_eq!(probe.calls(), 1);
    call.await
        .unwrap()
        .expect("the call under way finishes after the GOAWAY");
    drained.await.unwrap();
    assert_eq!(shutdown.in_flight().count(), 0);
    tonic_returns(server).await;
}

/// G2: a unary call still unanswered when the drain's bound passes is ended
/// then with `UNAVAILABLE` and its handler dropped, as `serve` closes the
/// connections still open then; tonic's graceful shutdown, set to phase 1
/// as the module's docs say, then has no call left to wait for.
#[tokio::test(start_paused = true)]
async fn a_unary_call_unanswered_when_the_drain_ends_is_ended_and_tonics_shutdown_returns() {
    let mut config = with_method("/fleet.Relay/Wait", MethodTimeout::Off);
    config.server.prestop_grace_secs = 0;
    config.server.shutdown_timeout_secs = 1;
    config.server.drain_force_secs = 1;
    let recording = Recording::new();
    let config = config.observed_by(recording.clone());
    let probe = Probe::default();
    let (shutdown, server, channel) = tonic_until_phase_one(&config, &probe).await;
    let mut relay = RelayClient::new(channel);
    let call = tokio::spawn(async move { relay.wait(wait(60_000)).await });
    tokio::time::sleep(MS(10)).await;
    assert_eq!(shutdown.in_flight().count(), 1);

    let start = Instant::now();
    shutdown.trigger();
    shutdown.wait_drained().await;
    assert_eq!(
        start.elapsed(),
        SECS(2),
        "the grace, then the drain's bound"
    );
    let status = call.await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("drain"), "{status:?}");
    assert_eq!(start.elapsed(), SECS(2), "ended when the drain was over");
    assert_eq!(probe.dropped(), 1, "the handler was dropped");
    assert_eq!(shutdown.in_flight().count(), 0);
    let cancelled: Vec<Event> = cancelled_events(&recording);
    assert_eq!(
        cancelled,
        [Event::RequestCancelled {
            reason: CancelReason::Shutdown
        }]
    );
    tonic_returns(server).await;
}

/// G1, G2: a stream still open at phase 2 is told to end: it ends with
/// `UNAVAILABLE`, and tonic's graceful shutdown, set to phase 1 as the
/// module's docs say (its GOAWAY ends no stream), then has no stream left
/// to wait for.
#[tokio::test(start_paused = true)]
async fn a_stream_open_at_phase_two_ends_and_tonics_shutdown_returns() {
    let mut config = with_method("/fleet.Relay/Ticks", MethodTimeout::Off);
    config.server.prestop_grace_secs = 0;
    config.server.shutdown_timeout_secs = 1;
    let (shutdown, server, channel) = tonic_until_phase_one(&config, &Probe::default()).await;
    let mut relay = RelayClient::new(channel);
    let mut ticks = relay
        .ticks(wait(100))
        .await
        .expect("the stream opens")
        .into_inner();
    ticks.next().await.expect("a tick").expect("a tick");

    let start = Instant::now();
    shutdown.trigger();
    let drained = drain::in_background(&shutdown);
    let ended = tokio::time::timeout(SECS(60), async {
        loop {
            match ticks.next().await {
                Some(Ok(_)) => {}
                Some(Err(status)) => break status,
                None => panic!("the stream ended without a status"),
            }
        }
    });
    let status = ended.await.expect("the stream ends at phase 2");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(start.elapsed(), SECS(1), "at phase 2, after the grace");
    drained.await.unwrap();
    assert_eq!(shutdown.in_flight().count(), 0);
    tonic_returns(server).await;
}

#[test]
fn a_method_name_of_another_shape_is_an_error_that_names_the_key() {
    let mut config = Config::default();
    config
        .server
        .grpc
        .methods
        .insert("fleet.Relay.Wait".to_owned(), MethodTimeout::Millis(100));
    config
        .server
        .grpc
        .methods
        .insert("/fleet.Relay/Forward".to_owned(), MethodTimeout::Millis(0));
    let err = config.validate().unwrap_err();
    let keys: Vec<_> = err.keys().collect();
    assert_eq!(
        keys,
        [
            r#"server.grpc.methods."/fleet.Relay/Forward""#,
            r#"server.grpc.methods."fleet.Relay.Wait""#
        ]
    );
    let message = err.to_string();
    assert!(message.contains("/package.Service/Method"), "{message}");
    for key in keys {
        assert!(message.contains(&format!("`{key}`")), "{message}");
    }
}

#[test]
fn method_deadlines_load_from_toml_as_milliseconds_or_off() {
    let config = timebox::config::Loader::new()
        .toml_str(
            r#"
            [server.grpc]
            default_timeout_ms = 5000
            [server.grpc.methods]
            "/fleet.Relay/Forward" = 1500
            "/fleet.Relay/Ticks" = "off"
            "#,
        )
        .load()
        .expect("the config loads");
    let methods = &config.server.grpc.methods;
    assert_eq!(methods["/fleet.Relay/Forward"], MethodTimeout::Millis(1500));
    assert_eq!(methods["/fleet.Relay/Ticks"], MethodTimeout::Off);

    let err = timebox::config::Loader::new()
        .toml_str("[server.grpc.methods]\n\"/fleet.Relay/Wait\" = \"never\"\n")
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("\"off\""), "{err}");
}

#[tokio::test(start_paused = true)]
async fn client_errors_become_statuses_that_keep_their_chain() {
    use std::error::Error as _;
    use timebox::client::ClientError;

    let exceeded = Deadline::after(Duration::ZERO)
        .scope(timebox::deadline::bounded(std::future::pending::<()>()))
        .await
        .unwrap_err();
    let status = Status::from(ClientError::DeadlineExceeded(exceeded));
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(is_deadline_exceeded(&status), "{status:?}");
    let upstream = |status| ClientError::Status {
        status,
        url: "https://orders.internal/v1".parse().expect("a valid URL"),
    };
    for (err, code) in [
        (ClientError::Timeout, Code::Unavailable),
        (
            upstream(http::StatusCode::TOO_MANY_REQUESTS),
            Code::Unavailable,
        ),
        (
            upstream(http::StatusCode::SERVICE_UNAVAILABLE),
            Code::Unavailable,
        ),
        (upstream(http::StatusCode::NOT_FOUND), Code::Internal),
        (ClientError::TooManyRedirects, Code::Internal),
        (
            ClientError::InvalidRequest("the url https://up/x?key=SECRET".to_owned()),
            Code::Internal,
        ),
        (breaker_open(), Code::Unavailable),
        (
            ClientError::Connect("connection refused".into()),
            Code::Unavailable,
        ),
        (
            ClientError::Transport("connection reset".into()),
            Code::Unavailable,
        ),
        (ClientError::Decode("expected `}`".into()), Code::Internal),
    ] {
        let said = err.to_string();
        let status = Status::from(err);
        assert_eq!(status.code(), code, "{status:?}");
        assert!(!is_deadline_exceeded(&status));
        // The whole error stays on this side, as the source.
        let source = status.source().expect("the error is the source");
        assert_eq!(source.to_string(), said);
    }
}

/// I4: what `bounded` gives becomes `DEADLINE_EXCEEDED` with `?`, keeping
/// the error as its source.
#[tokio::test(start_paused = true)]
async fn a_deadline_exceeded_becomes_a_deadline_status() {
    async fn handler() -> Result<(), Status> {
        Deadline::after(Duration::ZERO)
            .scope(timebox::deadline::bounded(std::future::pending::<()>()))
            .await?;
        Ok(())
    }
    let status = handler().await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(status.message(), "deadline exceeded");
    assert!(is_deadline_exceeded(&status), "{status:?}");
}

/// A status's message goes to the caller: it says what failed, not where,
/// nor what the URL or the body was.
#[test]
fn client_errors_become_statuses_that_keep_hosts_and_urls_to_themselves() {
    use timebox::client::ClientError;

    let (logs, _guard) = logs::Logs::capture();
    // The message, and whether the error is logged: an open breaker, which
    // refuses every call while it is, is not, as in the axum answer.
    for (err, message, logged) in [
        (
            breaker_open(),
            "an upstream's circuit breaker is open",
            false,
        ),
        (
            ClientError::InvalidRequest("the url https://up/x?key=SECRET".to_owned()),
            "an outbound call failed",
            true,
        ),
        (
            ClientError::Decode("expected `}` at SECRET".into()),
            "an outbound call failed",
            true,
        ),
        (ClientError::Timeout, "attempt timed out", true),
        (
            ClientError::Status {
                status: http::StatusCode::NOT_FOUND,
                url: "https://orders.internal/v1".parse().expect("a valid URL"),
            },
            "an upstream answered 404 Not Found",
            true,
        ),
    ] {
        let before = logs.lines_with("outbound call failed").len();
        let status = Status::from(err);
        assert_eq!(status.message(), message, "{status:?}");
        let lines = logs.lines_with("outbound call failed");
        assert_eq!(lines.len() - before, usize::from(logged), "{lines:?}");
    }
}

/// The error of a call an open breaker refused.
fn breaker_open() -> timebox::client::ClientError {
    use timebox::breaker::{BreakerConfig, CircuitBreaker};

    let config = BreakerConfig {
        minimum_sample_count: 1,
        ..BreakerConfig::default()
    };
    let breaker = CircuitBreaker::new(&config);
    breaker
        .try_acquire()
        .expect("a closed breaker admits")
        .failure();
    let open = breaker.try_acquire().expect_err("one failure opens it");
    timebox::client::ClientError::CircuitBreakerOpen {
        host: "up:80".to_owned(),
        open,
    }
}

#[tokio::test(start_paused = true)]
async fn a_method_deadline_is_told_when_set_and_when_exceeded() {
    let recording = timebox::observe::Recording::new();
    let config =
        with_method("/fleet.Relay/Wait", MethodTimeout::Millis(250)).observed_by(recording.clone());
    let channel = serve(Probe::default(), Some(GrpcDeadlineLayer::server(&config))).await;
    let status = RelayClient::new(channel)
        .wait(wait(2000))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    let route = Some("/fleet.Relay/Wait".into());
    assert_eq!(
        recording.events(),
        [
            timebox::observe::Event::DeadlineSet {
                source: timebox::observe::DeadlineSource::Route,
                budget: MS(250),
                route: route.clone(),
            },
            timebox::observe::Event::DeadlineExceeded {
                stage: timebox::observe::Stage::Handler,
                route,
            },
        ]
    );
}

/// Teaches `Wait` its median with 100 calls of 40 ms, then calls it with
/// 10 ms left: that call's status, and how long it took. The handler must
/// not have run for it.
async fn too_short_after_teaching(
    channel: tonic::transport::Channel,
    probe: &Probe,
) -> (Status, Duration) {
    let mut relay = RelayClient::new(channel);
    for _ in 0..100 {
        relay.wait(wait(40)).await.unwrap();
    }
    let calls = probe.calls();
    let mut request = Request::new(wait(40));
    request.set_timeout(MS(10));
    let start = Instant::now();
    let status = relay.wait(request).await.unwrap_err();
    let took = start.elapsed();
    assert_eq!(probe.calls(), calls, "the handler never ran");
    (status, took)
}

// A1 on the gRPC server: a call with less time than its method takes is
// not started.
#[tokio::test(start_paused = true)]
async fn a_call_shorter_than_its_methods_median_is_refused_with_deadline_exceeded() {
    let mut config = Config::default();
    config.server.admission.deadline_check = timebox::config::DeadlineCheck::Enforce;
    let probe = Probe::default();
    let channel = serve(probe.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let (status, took) = too_short_after_teaching(channel, &probe).await;
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert_eq!(took, Duration::ZERO, "refused before the handler ran");
    let message = status.message();
    assert!(
        message.contains("takes 40 ms") && message.contains("was not started"),
        "{message}"
    );
}

/// A1: a streamed method learns how long its calls take to end with `OK`,
/// not how soon their head comes: four ticks 10 ms apart take 40 ms.
#[tokio::test(start_paused = true)]
async fn a_streamed_method_learns_how_long_its_calls_take_to_end() {
    let mut config = Config::default();
    config.server.admission.deadline_check = timebox::config::DeadlineCheck::Enforce;
    let probe = Probe {
        ticks: Some(4),
        ..Probe::default()
    };
    let channel = serve(probe.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let mut relay = RelayClient::new(channel);
    for _ in 0..100 {
        let mut ticks = relay.ticks(wait(10)).await.unwrap().into_inner();
        while ticks.message().await.unwrap().is_some() {}
    }
    let calls = probe.calls();
    let mut request = Request::new(wait(10));
    request.set_timeout(MS(20));
    let status = relay.ticks(request).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("takes 40 ms"), "{status:?}");
    assert_eq!(probe.calls(), calls, "the handler never ran");
}

// A path a caller makes up never answers a success, so it takes none of
// the places of the checks' table: the methods that exist keep theirs.
#[tokio::test(start_paused = true)]
async fn made_up_methods_take_no_place_from_the_real_ones_checks() {
    let mut config = Config::default();
    config.server.admission.deadline_check = timebox::config::DeadlineCheck::Enforce;
    let probe = Probe::default();
    let channel = serve(probe.clone(), Some(GrpcDeadlineLayer::server(&config))).await;
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    for index in 0..300 {
        grpc.ready().await.expect("the channel is ready");
        let path = format!("/fleet.Relay/MadeUp{index}")
            .parse()
            .expect("a valid path");
        let status = grpc
            .unary(
                Request::new(wait(1)),
                path,
                tonic_prost::ProstCodec::<WaitRequest, WaitRequest>::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
    }
    let (status, _) = too_short_after_teaching(channel, &probe).await;
    assert_eq!(status.code(), Code::DeadlineExceeded);
    assert!(status.message().contains("was not started"), "{status:?}");
}
