//! timebox's tonic layers against the official gRPC implementation:
//! Python's `grpcio`, from PyPI into a virtual environment under
//! `target/`, over real loopback sockets. Bounds are short and asserted
//! from above with room.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use timebox::config::{Config, MethodTimeout};
use timebox::deadline::Deadline;
use timebox::grpc::GrpcDeadlineLayer;
use timebox::observe::{Event, Recording};
use timebox::shutdown::Shutdown;
use timebox_fleet::pb::relay_server::RelayServer;
use timebox_fleet::pb::WaitRequest;
use timebox_fleet::relay::Relay;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

#[path = "../../tests/support/venv.rs"]
mod venv;

#[path = "../../tests/support/drain.rs"]
mod drain;

/// Room for a Python process and a loopback round trip on a busy machine.
const ROOM: Duration = Duration::from_millis(1500);

fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        venv::venv_python(
            Path::new(env!("CARGO_TARGET_TMPDIR")),
            "grpcio-venv",
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/requirements.txt"),
        )
    })
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/grpc_checks.py")
}

/// Serves a relay (whose leaf no test reaches) on a loopback port under
/// `layer`.
async fn serve(layer: GrpcDeadlineLayer) -> (SocketAddr, Relay) {
    let relay = Relay::new(&Config::default(), "http://127.0.0.1:9/unused".to_owned());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tonic::transport::Server::builder()
        .layer(layer)
        .add_service(RelayServer::new(relay.clone()));
    tokio::spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        server.serve_with_incoming(incoming).await
    });
    (addr, relay)
}

/// What `grpc_checks.py call` saw.
async fn grpcio_call(
    addr: SocketAddr,
    method: &str,
    timeout_s: f64,
    millis: u64,
) -> serde_json::Value {
    let output = Command::new(python())
        .arg(script())
        .args([
            "call",
            &addr.to_string(),
            method,
            &timeout_s.to_string(),
            &millis.to_string(),
        ])
        .output()
        .await
        .expect("the grpcio check runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the grpcio check failed\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

/// Waits, with a bound, until `relay` has dropped `n` handlers.
async fn dropped(relay: &Relay, n: usize) -> usize {
    let start = Instant::now();
    while relay.dropped() < n && start.elapsed() < ROOM {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    relay.dropped()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpcio_client_with_a_short_timeout_gets_deadline_exceeded_and_the_handler_is_dropped() {
    let recording = Recording::new();
    let config = Config::default().observed_by(recording.clone());
    let (addr, relay) = serve(GrpcDeadlineLayer::server(&config)).await;
    let seen = grpcio_call(addr, "/fleet.Relay/Wait", 0.3, 2000).await;
    assert_eq!(seen["code"], "DEADLINE_EXCEEDED", "{seen}");
    let elapsed = seen["elapsed"].as_f64().unwrap();
    assert!(elapsed < 0.3 + ROOM.as_secs_f64(), "{seen}");
    assert_eq!(dropped(&relay, 1).await, 1, "the handler was dropped");
    // grpcio's client and tonic's own timer would give the two above
    // without timebox: the layer took the call's deadline from grpcio's
    // `grpc-timeout`, and ran the handler under it.
    let set: Vec<_> = recording
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::DeadlineSet { source, budget, .. } => Some((source.as_str(), budget)),
            _ => None,
        })
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    assert_eq!(set[0].0, "grpc-timeout", "{set:?}");
    // gRPC core's encoding of what is left of the 300 ms "may round up
    // arbitrarily" (its own header says so): `301m` happens.
    assert!(set[0].1 <= Duration::from_millis(310), "{set:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpcio_client_reads_the_servers_own_deadline_exceeded() {
    let mut config = Config::default();
    config
        .server
        .grpc
        .methods
        .insert("/fleet.Relay/Wait".to_owned(), MethodTimeout::Millis(300));
    let (addr, relay) = serve(GrpcDeadlineLayer::server(&config)).await;
    // The client's own deadline is far off: the answer is the server's.
    let seen = grpcio_call(addr, "/fleet.Relay/Wait", 30.0, 10_000).await;
    assert_eq!(seen["code"], "DEADLINE_EXCEEDED", "{seen}");
    assert_eq!(
        seen["details"],
        r#"deadline of 300 ms from server.grpc.methods."/fleet.Relay/Wait" exceeded"#
    );
    assert!(
        seen["elapsed"].as_f64().unwrap() < 0.3 + ROOM.as_secs_f64(),
        "{seen}"
    );
    assert_eq!(dropped(&relay, 1).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpcio_client_gets_unavailable_in_shutdown_phase_one() {
    let mut config = Config::default();
    config.server.prestop_grace_secs = 0;
    let shutdown = Shutdown::new(&config);
    let (addr, _relay) = serve(GrpcDeadlineLayer::server(&config).shutdown(&shutdown)).await;
    let in_flight = shutdown.in_flight().enter(); // holds phase 1 open
    shutdown.trigger();
    let drained = drain::in_background(&shutdown);
    tokio::time::timeout(ROOM, shutdown.token().cancelled())
        .await
        .expect("phase 1 begins at once");

    let seen = grpcio_call(addr, "/fleet.Relay/Wait", 5.0, 0).await;
    assert_eq!(seen["code"], "UNAVAILABLE", "{seen}");
    let pushback: u64 = seen["trailing"]["grpc-retry-pushback-ms"]
        .as_str()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("a pushback: {seen}"));
    assert!((1000..=3000).contains(&pushback), "{pushback}");
    drop(in_flight);
    drained.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpcio_server_sees_what_is_left_of_our_deadline() {
    let mut server = Command::new(python())
        .arg(script())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the grpcio server starts");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the grpcio server says its port")
        .unwrap()
        .expect("a line");
    let port: u16 = serde_json::from_str::<serde_json::Value>(&first).unwrap()["port"]
        .as_u64()
        .and_then(|port| port.try_into().ok())
        .expect("a port");

    let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .expect("the grpcio server accepts");
    let channel = tower::ServiceBuilder::new()
        .layer(GrpcDeadlineLayer::client(&Config::default()))
        .service(channel);
    let mut relay = timebox_fleet::pb::relay_client::RelayClient::new(channel);

    let budget = Duration::from_millis(1500);
    let start = Instant::now();
    Deadline::after(budget)
        .scope(relay.wait(WaitRequest { millis: 0 }))
        .await
        .expect("the grpcio server answers");
    let spent = start.elapsed();

    let line = lines
        .next_line()
        .await
        .unwrap()
        .expect("the server reports the call");
    let remaining = serde_json::from_str::<serde_json::Value>(&line).unwrap()["time_remaining"]
        .as_f64()
        .expect("a time remaining");
    assert!(remaining <= budget.as_secs_f64(), "{remaining} s");
    // Within rounding: our `grpc-timeout` is rounded down to whole
    // milliseconds on the way, and grpcio counts it from its own reading of
    // the clock at receipt, which it may have taken a little earlier (it
    // caches the time for a batch of work): a millisecond each.
    let least = budget.as_secs_f64() - spent.as_secs_f64() - 0.002;
    assert!(remaining >= least, "{remaining} s < {least} s");
    drop(server.stdin.take());
}
