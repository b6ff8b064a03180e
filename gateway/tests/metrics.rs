//! `GET /metrics` (DESIGN O3): what the gateway decided, in the Prometheus
//! text format, read by the official Python parser and scraped by a real
//! Prometheus server.
//!
//! Each test drives a hung stream, a timed-out request, five requests with
//! too little time left and a burst of `503`s from a failing tool host: the
//! official MCP SDK's server behind a proxy that starts answering `503`
//! itself.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{
    metrics_python, open_stream, read_to_end, scratch_dir, FlakyProxy, Gateway, McpServer,
};

const CHAT: &str = "/v1/chat/completions";

/// Requests sent to the failing tool host: enough for its breaker to open
/// (once its window holds 10 calls, half of them failed) and then refuse
/// the rest.
const BURST: usize = 15;

/// A gateway whose streams time out after 1 s of silence and whose answers
/// that are not streamed must be ready in 300 ms, with the MCP server
/// `flaky`: the SDK server behind a [`FlakyProxy`].
struct Setup {
    gateway: Gateway,
    proxy: FlakyProxy,
    /// The tool host's key as the metrics label it: the proxy's
    /// `127.0.0.1:<port>`.
    host: String,
    _server: McpServer,
}

fn short_bounds_gateway(test: &str) -> Setup {
    let dir = scratch_dir(test);
    let server = McpServer::http(&dir.join("server.jsonl"), &[]);
    let (upstream, path) = server
        .url
        .rsplit_once('/')
        .expect("the server's URL has a path");
    let proxy = FlakyProxy::start(upstream);
    std::fs::write(
        dir.join("timebox.toml"),
        format!(
            "[mcp.servers.flaky]\nurl = \"{}/{path}\"\ntools = [\"slow_task\"]\n",
            proxy.base
        ),
    )
    .expect("write timebox.toml");
    let gateway = Gateway::start_in(
        Some(&dir),
        &[
            ("TIMEBOX_STREAM__STREAM_INACTIVITY_TIMEOUT_SECS", "1"),
            ("TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT_MS", "300"),
        ],
    );
    let host = proxy.base.trim_start_matches("http://").to_owned();
    Setup {
        gateway,
        proxy,
        host,
        _server: server,
    }
}

/// Makes the tool host fail, then sends it [`BURST`] tool calls: each
/// stream ends with the gateway's `tool_server_error`.
async fn cause_a_burst_of_503s_from_a_failing_tool_host(setup: &Setup) {
    setup.proxy.fail();
    let client = reqwest::Client::new();
    for _ in 0..BURST {
        let mut stream = open_stream(&client, &setup.gateway.base, "scripted-tool-1s@flaky").await;
        let body = read_to_end(&mut stream).await;
        assert!(body.contains("tool_server_error"), "{body}");
    }
    assert!(setup.proxy.failures() > 0, "the tool host answered 503s");
}

/// Drives one hung stream to its inactivity timeout and one answer that is
/// not streamed past its deadline.
async fn cause_a_hung_stream_and_a_timed_out_request(gateway: &Gateway) {
    let client = reqwest::Client::new();
    let mut stream = open_stream(&client, &gateway.base, "scripted-hang").await;
    let body = read_to_end(&mut stream).await;
    assert!(body.contains("inactivity"), "{body}");
    let late = client
        .post(format!("{}{CHAT}", gateway.base))
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
                "model": "scripted-slow-30s",
                "messages": [{ "role": "user", "content": "What is a deadline?" }],
            })
            .to_string(),
        )
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(
        late.status(),
        503,
        "{}",
        late.text().await.unwrap_or_default()
    );
    // Five streams whose callers leave them 50 ms, under the chat route's
    // `min_budget_ms = 100`.
    for _ in 0..5 {
        let mut short = client
            .post(format!("{}{CHAT}", gateway.base))
            .header("content-type", "application/json")
            .header("x-timebox-deadline-ms", "50")
            .body(
                serde_json::json!({
                    "model": "scripted-fast",
                    "messages": [{ "role": "user", "content": "Quick?" }],
                    "stream": true,
                })
                .to_string(),
            )
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(short.status(), 200, "dark mode serves it");
        read_to_end(&mut short).await;
    }
}

async fn metrics_text(gateway: &Gateway) -> String {
    let response = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .expect("the gateway answers /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    response.text().await.expect("a text body")
}

/// `text` parsed by `prometheus_client.parser`: its families' types and
/// its samples.
fn parsed(text: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/parse_metrics.py");
    let mut child = Command::new(metrics_python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the parser runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .expect("the parser reads the text");
    let output = child.wait_with_output().expect("the parser ends");
    assert!(
        output.status.success(),
        "the official parser refused the text: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the parser prints JSON")
}

/// The values of the samples `name` whose labels include `labels`.
fn samples<'a>(
    parsed: &'a Value,
    name: &'a str,
    labels: &'a [(&str, &str)],
) -> impl Iterator<Item = f64> + 'a {
    parsed["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |sample| {
            sample[0] == name
                && labels
                    .iter()
                    .all(|(key, value)| sample[1][*key].as_str() == Some(*value))
        })
        .filter_map(|sample| sample[2].as_f64())
}

/// The sum of the samples `name` whose labels include `labels`.
fn sample_sum(parsed: &Value, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples(parsed, name, labels).sum()
}

/// The value of the sample `name` whose labels include `labels`.
fn sample(parsed: &Value, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples(parsed, name, labels).next()
}

#[tokio::test]
async fn the_metrics_parse_with_the_official_parser_and_count_what_happened() {
    let setup = short_bounds_gateway("metrics-parser");
    let gateway = &setup.gateway;
    cause_a_hung_stream_and_a_timed_out_request(gateway).await;
    cause_a_burst_of_503s_from_a_failing_tool_host(&setup).await;
    let parsed = tool_host_settled(&setup).await;
    assert_eq!(
        parsed["types"]["timebox_stream_timeouts"], "counter",
        "{parsed}"
    );
    // Histograms with buckets (O3), which Prometheus can add up across
    // replicas, not one process's quantiles.
    assert_eq!(
        parsed["types"]["timebox_deadline_remaining_seconds"], "histogram",
        "{parsed}"
    );
    assert!(
        sample(
            &parsed,
            "timebox_deadline_remaining_seconds_bucket",
            &[("source", "global"), ("route", CHAT), ("le", "+Inf")]
        )
        .is_some_and(|count| count >= 1.0),
        "{parsed}"
    );
    assert_eq!(
        sample(
            &parsed,
            "timebox_stream_timeouts_total",
            &[("kind", "inactivity"), ("route", CHAT)]
        ),
        Some(1.0),
        "{parsed}"
    );
    assert_eq!(
        sample(
            &parsed,
            "timebox_requests_cancelled_total",
            &[("reason", "timeout")]
        ),
        Some(1.0),
        "{parsed}"
    );
    assert_eq!(
        sample(
            &parsed,
            "timebox_deadline_exceeded_total",
            &[("stage", "handler"), ("route", CHAT)]
        ),
        Some(1.0),
        "{parsed}"
    );
    // Dark-mode admission counted the one request of five that it would
    // have refused (the cap lets a fifth through), and served them all.
    assert_eq!(
        sample(
            &parsed,
            "timebox_server_shed_total",
            &[("reason", "deadline_too_short_dark"), ("route", CHAT)]
        ),
        Some(1.0),
        "{parsed}"
    );
    // The request that is not streamed got the global deadline of 300 ms.
    assert!(
        sample(
            &parsed,
            "timebox_deadline_remaining_seconds_count",
            &[("source", "global"), ("route", CHAT)]
        )
        .is_some_and(|count| count >= 1.0),
        "{parsed}"
    );
    let host = setup.host.as_str();
    assert_eq!(
        sample(
            &parsed,
            "timebox_breaker_transitions_total",
            &[("host", host), ("from", "closed"), ("to", "open")]
        ),
        Some(1.0),
        "{parsed}"
    );
    assert_eq!(
        sample(&parsed, "timebox_breaker_state", &[("host", host)]),
        Some(2.0),
        "the breaker is open: {parsed}"
    );
    assert!(
        sample(
            &parsed,
            "timebox_breaker_calls_total",
            &[("host", host), ("outcome", "rejected")]
        )
        .is_some_and(|count| count >= 1.0),
        "the open breaker refused the rest of the burst: {parsed}"
    );
    assert_eq!(
        sample(
            &parsed,
            "timebox_client_attempts_total",
            &[("host", host), ("outcome", "2xx"), ("kind", "retry")]
        ),
        None,
        "nothing was retried into a success: {parsed}"
    );
}

/// The parsed metrics once the gateway has counted every `503` the tool
/// host answered (the last sessions' ends may still be on their way).
async fn tool_host_settled(setup: &Setup) -> Value {
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let parsed = parsed(&metrics_text(&setup.gateway).await);
        let counted = sample_sum(
            &parsed,
            "timebox_client_attempts_total",
            &[("host", &setup.host), ("outcome", "5xx")],
        );
        // The proxy counts a 503 before it answers, so it is never behind.
        #[allow(clippy::cast_precision_loss)]
        let answered = setup.proxy.failures() as f64;
        if counted == answered {
            return parsed;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "the gateway counted {counted} attempts answered 5xx, the host sent {answered}: {parsed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `prometheus` binary, or a failure that says how to get it.
fn prometheus() -> String {
    support::needs_on_path("prometheus", "prometheus");
    "prometheus".to_owned()
}

/// Asks the Prometheus at `api` for the instant value of `query`.
async fn query(client: &reqwest::Client, api: &str, query: &str) -> Option<f64> {
    let text = client
        .get(format!("{api}/api/v1/query"))
        .query(&[("query", query)])
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let answer: Value = serde_json::from_str(&text).ok()?;
    answer["data"]["result"][0]["value"][1]
        .as_str()?
        .parse()
        .ok()
}

#[tokio::test]
#[ignore = "needs prometheus on PATH; .ci/run installs it"]
async fn a_real_prometheus_scrapes_the_gateway_and_sees_what_happened() {
    let binary = prometheus();
    let setup = short_bounds_gateway("metrics-prometheus");
    let gateway = &setup.gateway;
    let target = gateway.base.trim_start_matches("http://").to_owned();
    let dir = tempdir();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gateway\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .expect("the config is written");
    let client = reqwest::Client::new();
    let prometheus = Prometheus::start(&binary, &config, &dir, &client).await;
    cause_a_hung_stream_and_a_timed_out_request(gateway).await;
    cause_a_burst_of_503s_from_a_failing_tool_host(&setup).await;
    // What the gateway's own page says once it has counted every 503: what
    // Prometheus must come to see.
    let settled = tool_host_settled(&setup).await;
    let host = &setup.host;
    #[allow(clippy::cast_precision_loss)]
    let answered = setup.proxy.failures() as f64;
    let rejected = sample(
        &settled,
        "timebox_breaker_calls_total",
        &[("host", host), ("outcome", "rejected")],
    )
    .expect("the open breaker refused calls");
    let attempts = format!("sum(timebox_client_attempts_total{{host=\"{host}\",outcome=\"5xx\"}})");
    let opened =
        format!("timebox_breaker_transitions_total{{host=\"{host}\",from=\"closed\",to=\"open\"}}");
    let state = format!("timebox_breaker_state{{host=\"{host}\"}}");
    let refused = format!("timebox_breaker_calls_total{{host=\"{host}\",outcome=\"rejected\"}}");
    let api = prometheus.api.as_str();
    let wanted = [
        (
            "timebox_stream_timeouts_total{kind=\"inactivity\",route=\"/v1/chat/completions\"}",
            1.0,
        ),
        ("timebox_requests_cancelled_total{reason=\"timeout\"}", 1.0),
        (
            "timebox_deadline_exceeded_total{stage=\"handler\",route=\"/v1/chat/completions\"}",
            1.0,
        ),
        (attempts.as_str(), answered),
        (opened.as_str(), 1.0),
        (state.as_str(), 2.0),
        (refused.as_str(), rejected),
    ];
    // Scrapes come every second; give it up to 30 s to have seen them all.
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut seen = Vec::new();
        for (expression, _) in wanted {
            seen.push(query(&client, api, expression).await);
        }
        let expected: Vec<_> = wanted.iter().map(|(_, value)| Some(*value)).collect();
        if seen == expected {
            break;
        }
        if std::time::Instant::now() >= give_up {
            let targets = client
                .get(format!("{api}/api/v1/targets"))
                .send()
                .await
                .map(|response| response.text());
            let targets = match targets {
                Ok(text) => text.await.unwrap_or_default(),
                Err(err) => err.to_string(),
            };
            let raw = client
                .get(format!("{api}/api/v1/query"))
                .query(&[("query", wanted[0].0)])
                .send()
                .await
                .map(|response| response.text());
            let raw = match raw {
                Ok(text) => text.await.unwrap_or_default(),
                Err(err) => err.to_string(),
            };
            let log = format!(
                "{raw}\n{}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            panic!("prometheus saw {seen:?}, wanted {expected:?}\ntargets: {targets}\nlog: {log}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A Prometheus server on a loopback port, killed when dropped.
struct Prometheus {
    child: support::child::Killed,
    /// Its HTTP API, `http://127.0.0.1:port`.
    api: String,
}

impl Prometheus {
    /// Starts `binary` with `config`, its data and its log in `dir`, on a
    /// loopback port that was free a moment before; once it says it is
    /// ready. A port taken in that moment makes Prometheus exit, and it is
    /// started again on another (three tries).
    async fn start(binary: &str, config: &Path, dir: &Path, client: &reqwest::Client) -> Self {
        let log = dir.join("prometheus.log");
        for _ in 0..3 {
            let listen = free_loopback_port();
            let child = Command::new(binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{listen}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("a log file"))
                .spawn()
                .expect("prometheus starts");
            let mut server = Prometheus {
                child: support::child::Killed(child),
                api: format!("http://127.0.0.1:{listen}"),
            };
            if server.ready(client).await {
                return server;
            }
        }
        panic!(
            "prometheus exited at startup three times; its last log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Waits for `/-/ready` to answer 200, at most 30 s; `false` when the
    /// process exited first.
    async fn ready(&mut self, client: &reqwest::Client) -> bool {
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let exited = self
                .child
                .0
                .try_wait()
                .expect("prometheus can be waited for");
            if exited.is_some() {
                return false;
            }
            // Prometheus's own words: another server that took the port
            // answers otherwise, or not at all.
            if let Ok(response) = client.get(format!("{}/-/ready", self.api)).send().await {
                let said = response.text().await.unwrap_or_default();
                if said.contains("Prometheus Server is Ready") {
                    return true;
                }
            }
            assert!(
                std::time::Instant::now() < give_up,
                "prometheus at {} was not ready within 30 s",
                self.api
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "prometheus-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A port on loopback that was free a moment ago, for a server that takes
/// its port on the command line.
fn free_loopback_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}
