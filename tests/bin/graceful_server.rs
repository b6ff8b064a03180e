//! A server for the shutdown tests that need a real process and real
//! signals: `GET /work/{ms}` answers after `ms` milliseconds, and
//! `GET /in-flight` with the count of requests in flight, itself included,
//! so a test can wait for its requests to be let in. It prints
//! `listening on <addr>` once it accepts, and exits 0 when the shutdown
//! sequence is over. Configured like any timebox service (`timebox.toml`,
//! `TIMEBOX_*` variables). Logs go to stderr, warnings and up unless
//! `RUST_LOG` says otherwise.

use std::process::ExitCode;
use std::time::Duration;

use axum::extract::Path;
use timebox::config::Config;
use timebox::shutdown::Shutdown;
use timebox::{get, routes};

#[get("/work/{ms}", timeout = "off")]
async fn work(Path(ms): Path<u64>) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("worked {ms} ms")
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let config = match Config::load() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    };
    let shutdown = Shutdown::new(&config);
    if let Err(err) = shutdown.listen_for_signals() {
        eprintln!("cannot listen for signals: {err}");
        return ExitCode::FAILURE;
    }
    let listener = match listen() {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("cannot bind: {err}");
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => println!("listening on {addr}"),
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::FAILURE;
        }
    }
    let in_flight = shutdown.in_flight();
    let app = routes![work].into_router(&config).route(
        "/in-flight",
        axum::routing::get(move || std::future::ready(in_flight.count().to_string())),
    );
    match timebox::server::serve(listener, app, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A loopback listener with room for 1024 connections waiting to be
/// accepted (the standard library's 128 is too few for the descriptor-limit
/// test, whose clients must all get through the handshake).
fn listen() -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(([127, 0, 0, 1], 0).into())?;
    socket.listen(1024)
}
