//! A reference application of timebox: an OpenAI-compatible chat gateway
//! that streams answers from scripted models, which call a slow tool over
//! MCP.
//!
//! Everything that has to do with time is timebox's public API:
//!
//! - the routes are `#[post]`/`#[get]` handlers mounted with
//!   `timebox::routes!`, so an answer that is not streamed runs under the
//!   request deadline (`server.timeouts.request_timeout_ms`);
//! - a streamed answer is a [`SseStream`](timebox::server::sse::SseStream)
//!   under a [`Watchdog`](timebox::watchdog::Watchdog) built from the
//!   `stream.*` settings: a first-chunk timer, an inactivity timer that is
//!   suspended while a tool runs, a total timer and heartbeat comments;
//! - each request is registered in a [`Registry`](timebox::registry::Registry)
//!   and its tool calls in its [`ToolCalls`](timebox::registry::ToolCalls);
//!   when a stream times out or the client goes away, the MCP server is
//!   sent `notifications/cancelled` for the calls in flight, bounded, and
//!   the request's pooled MCP sessions are evicted;
//! - the tools run on MCP servers named in the settings (`[mcp.servers.*]`,
//!   streamable HTTP or stdio), or on the built-in one; over HTTP, every
//!   request goes through timebox's [`Client`](timebox::client::Client),
//!   so each server's host (`host:port`, which servers on one host share)
//!   has its retry budget and circuit breaker, shown in `/metrics`;
//! - SIGTERM starts timebox's two-phase `Shutdown`:
//!   new requests get `503` with `Retry-After`, streams get the grace to
//!   finish, then `[DONE]`; the MCP sessions are closed last, after the
//!   servers have read the streams' cancellation notices: up to 2 s for the
//!   notices and 2 s for the sessions to close, after `serve` returns, so
//!   the orchestrator's grace should be 4 s longer than shutdown's own
//!   (`prestop_grace_secs + shutdown_timeout_secs + drain_force_secs`).
//!
//! Run it with `cargo run --example chat_gateway`; the README shows what
//! each scripted model does, with curl.

mod app;
mod model;
mod openai;
mod script;
mod settings;
mod tools;
mod upkeep;

use std::io::IsTerminal;
use std::process::ExitCode;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use timebox::observe::{MetricsObserver, SECONDS_BUCKETS};
use timebox::registry::RemoteCleanup;
use timebox::shutdown::Shutdown;
use tracing_subscriber::EnvFilter;

pub use settings::{ADDR_ENV, DEFAULT_ADDR};

/// The log filter when `RUST_LOG` is not set: the MCP SDK's own
/// per-message lines are left out.
const DEFAULT_LOG: &str = "info,rmcp=warn";

/// Runs the gateway until it is shut down: loads the settings, connects to
/// the MCP servers, listens, prints `listening on http://<addr>` and serves
/// until SIGTERM or Ctrl-C, then runs the shutdown sequence.
///
/// Logs go to stderr; `RUST_LOG` filters them (default `info,rmcp=warn`).
#[must_use]
pub fn serve_until_shutdown() -> ExitCode {
    let filter = match log_filter() {
        Ok(filter) => filter,
        Err(err) => {
            eprintln!("chat gateway: {err}");
            return ExitCode::FAILURE;
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chat gateway: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The log filter `RUST_LOG` says, [`DEFAULT_LOG`] when it is not set or
/// empty (`RUST_LOG=` in an env file: a filter of no directives would
/// turn every line off without a word); an error naming it when it is set
/// to something that is not a filter.
fn log_filter() -> Result<EnvFilter, String> {
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(EnvFilter::new(DEFAULT_LOG)),
        Ok(directives) if directives.trim().is_empty() => Ok(EnvFilter::new(DEFAULT_LOG)),
        Err(std::env::VarError::NotUnicode(_)) => Err("`RUST_LOG` is not valid UTF-8".to_owned()),
        Ok(directives) => EnvFilter::try_new(&directives)
            .map_err(|err| format!("`RUST_LOG` is not a log filter ({directives:?}): {err}")),
    }
}

/// Why the gateway stopped with an error.
#[derive(Debug, thiserror::Error)]
enum GatewayError {
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    #[error("cannot listen for signals: {0}")]
    Signals(#[source] std::io::Error),
    #[error("cannot start the tools: {0}")]
    Tools(#[from] tools::ToolError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot install the metrics recorder: {0}")]
    Metrics(#[source] metrics_exporter_prometheus::BuildError),
    #[error("server failed: {0}")]
    Serve(#[source] std::io::Error),
}

async fn run() -> Result<(), GatewayError> {
    let settings = settings::Settings::load()?;
    // Prometheus's naming: counters end in `_total`, seconds in `_seconds`;
    // histograms with buckets, not summaries.
    let metrics = PrometheusBuilder::new()
        .with_recommended_naming(true)
        .set_buckets_for_metric(Matcher::Prefix("timebox".into()), SECONDS_BUCKETS)
        .map_err(GatewayError::Metrics)?
        .install_recorder()
        .map_err(GatewayError::Metrics)?;
    let _upkeep = upkeep::every(upkeep::EVERY, {
        let metrics = metrics.clone();
        move || metrics.run_upkeep()
    });
    // The recorder first: the observer describes every metric to it. Every
    // part is built from this config, so every part is observed.
    let config = settings.config.observed_by(MetricsObserver::new());
    let shutdown = Shutdown::new(&config);
    shutdown
        .listen_for_signals()
        .map_err(GatewayError::Signals)?;
    // A stop asked for while the MCP servers are still connecting (each
    // may take its `connect_timeout_ms` twice) ends the start there: there
    // is nothing to drain, and dropping the pools ends the stdio servers.
    let tools = tokio::select! {
        biased;
        () = shutdown.triggered() => {
            tracing::info!("shut down while starting: never served");
            return Ok(());
        }
        tools = tools::Tools::start(settings.servers, &config) => tools?,
    };
    let addr = settings.addr;
    let listen = |source| GatewayError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    let addr = listener.local_addr().map_err(listen)?;
    let router = app::App::new(
        config,
        tools.clone(),
        settings.default_server,
        metrics,
        &shutdown,
    )
    .router(&shutdown);
    println!("listening on http://{addr}");
    let served = timebox::server::serve(listener, router, shutdown.clone()).await;
    // The streams' last notices went to the MCP servers just before the
    // server stopped; let them read them before the process ends, unless a
    // second signal asks to end at once (or asked already).
    tokio::select! {
        biased;
        () = shutdown.forced() => {}
        () = tools.close(RemoteCleanup::DEFAULT_PER_NOTICE) => {}
    }
    served.map_err(GatewayError::Serve)?;
    tracing::info!("shut down");
    Ok(())
}
