//! A server for the shutdown tests that need a real process and real
//! signals: `GET /work/{ms}` answers after `ms` milliseconds. It prints
//! `listening on <addr>` once it accepts, and exits 0 when the shutdown
//! sequence is over. Configured like any timebox service (`timebox.toml`,
//! `TIMEBOX_*` variables).

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
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
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
    let app = routes![work].into_router(&config);
    match timebox::server::serve(listener, app, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}
