//! Running the gateway as a process, and the official Python client against
//! it.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a gateway may take to print its address.
const STARTUP_BOUND: Duration = Duration::from_secs(30);

/// A gateway process on 127.0.0.1 with an OS-chosen port, killed on drop.
pub struct Gateway {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    log: Arc<Log>,
}

/// The lines the gateway wrote to stderr, as they come.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<(Instant, String)>>,
    grew: Condvar,
}

impl Gateway {
    /// Starts the gateway binary with its embedded defaults plus `env`
    /// (every `TIMEBOX_` variable of the test's own environment removed),
    /// and waits for its `listening on` line.
    pub fn start(env: &[(&str, &str)]) -> Self {
        Self::start_in(None, env)
    }

    /// As [`start`](Self::start), in the working directory `dir` when
    /// given, so that its `timebox.toml` is read.
    pub fn start_in(dir: Option<&Path>, env: &[(&str, &str)]) -> Self {
        Self::launch(Command::new(env!("CARGO_BIN_EXE_chat-gateway")), dir, env)
    }

    /// As [`start_in`](Self::start_in), as the leader of a process group
    /// of its own, as a shell starts a job: [`ctrl_c`](Self::ctrl_c)
    /// signals the group.
    #[cfg(unix)]
    pub fn start_in_group(dir: &Path, env: &[(&str, &str)]) -> Self {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_chat-gateway"));
        command.process_group(0);
        Self::launch(command, Some(dir), env)
    }

    /// As [`start_in`](Self::start_in), without waiting for it to listen:
    /// a gateway still starting, with no address yet.
    pub fn starting_in(dir: &Path, env: &[(&str, &str)]) -> Self {
        let command = Command::new(env!("CARGO_BIN_EXE_chat-gateway"));
        Self::spawn(command, Some(dir), env).0
    }

    fn launch(command: Command, dir: Option<&Path>, env: &[(&str, &str)]) -> Self {
        let (mut gateway, first_line) = Self::spawn(command, dir, env);
        let line = first_line
            .recv_timeout(STARTUP_BOUND)
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                panic!(
                    "the gateway printed no address within {STARTUP_BOUND:?}; its log:\n{}",
                    gateway.log_text()
                )
            });
        gateway.base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("a `listening on` line, not {line:?}"))
            .to_owned();
        gateway
    }

    /// The gateway's process, with its stderr read into the log; and its
    /// first line on stdout, as it comes.
    fn spawn(
        mut command: Command,
        dir: Option<&Path>,
        env: &[(&str, &str)],
    ) -> (Self, std::sync::mpsc::Receiver<Option<String>>) {
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        let mut child = child::without_timebox_env(&mut command)
            .env("CHAT_GATEWAY_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "info,rmcp=warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the gateway starts");
        let log = Arc::new(Log::default());
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((Instant::now(), line));
                sink.grew.notify_all();
            }
        });
        let first_line = first_stdout_line(&mut child);
        let gateway = Self {
            child,
            base: String::new(),
            log,
        };
        (gateway, first_line)
    }

    /// When the first stderr line containing every one of `needles` was
    /// written, waiting for it at most `bound`.
    pub fn wait_for_log(&self, needles: &[&str], bound: Duration) -> Option<Instant> {
        self.wait_for_log_line(needles, bound).map(|(at, _)| at)
    }

    /// The first stderr line containing every one of `needles`, with when
    /// it was read, waiting for it at most `bound`.
    pub fn wait_for_log_line(
        &self,
        needles: &[&str],
        bound: Duration,
    ) -> Option<(Instant, String)> {
        self.wait_for(bound, |lines| {
            lines
                .iter()
                .find(|(_, line)| needles.iter().all(|needle| line.contains(needle)))
                .cloned()
        })
    }

    /// Waits at most `bound` for `seen` to find something in the stderr
    /// lines (each with the time it was read), looking again at every new
    /// line.
    pub fn wait_for<T>(
        &self,
        bound: Duration,
        mut seen: impl FnMut(&[(Instant, String)]) -> Option<T>,
    ) -> Option<T> {
        let give_up = Instant::now() + bound;
        let mut lines = self
            .log
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(found) = seen(&lines) {
                return Some(found);
            }
            let left = give_up.checked_duration_since(Instant::now())?;
            lines = self
                .log
                .grew
                .wait_timeout(lines, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The stderr lines so far, in order.
    pub fn log_lines(&self) -> Vec<String> {
        let lines = self
            .log
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(|(_, line)| line.clone()).collect()
    }

    /// Everything written to stderr so far, for failure messages.
    pub fn log_text(&self) -> String {
        let lines = self
            .log
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(|(_, line)| format!("{line}\n")).collect()
    }

    /// Sends the process SIGTERM.
    #[cfg(unix)]
    pub fn sigterm(&self) {
        child::sigterm(self.child.id());
    }

    /// Sends SIGINT to the gateway's process group, as Ctrl-C in its
    /// terminal does; for a gateway started with
    /// [`start_in_group`](Self::start_in_group).
    #[cfg(unix)]
    pub fn ctrl_c(&self) {
        child::sigint_group(self.child.id());
    }

    /// The exit code, waiting at most `bound` for the process to exit.
    pub fn exit_within(&mut self, bound: Duration) -> Option<i32> {
        let give_up = Instant::now() + bound;
        loop {
            if let Some(status) = self
                .child
                .try_wait()
                .expect("the gateway can be waited for")
            {
                return status.code();
            }
            assert!(
                Instant::now() < give_up,
                "the gateway did not exit within {bound:?}; its log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first line `child` prints, where the gateway and the MCP server say
/// their address, as it comes; the rest is read and dropped, so the child
/// never writes to a closed pipe.
fn first_stdout_line(child: &mut Child) -> std::sync::mpsc::Receiver<Option<String>> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (address, first_line) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
        let _ = address.send(lines.next());
        lines.for_each(drop);
    });
    first_line
}

#[path = "../../../tests/support/venv.rs"]
mod venv;

#[cfg(unix)]
#[path = "../../../tests/support/child.rs"]
pub mod child;

#[path = "../../../tests/support/ports.rs"]
pub mod ports;

/// Fails, saying how to get it, unless `program` is on `PATH`: a real part
/// that only Debian ships (`apt-get install <package>`), which `.ci/run`
/// installs for the test that needs it.
pub fn needs_on_path(program: &str, package: &str) {
    let found = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found,
        "needs `{program}` on PATH (Debian: `apt-get install {package}`; .ci/run installs it)"
    );
}

/// The Python interpreter of a virtual environment with the pinned `openai`
/// package, made (and the package installed from PyPI) on first use.
pub fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    venv_under_target(&PYTHON, "openai-venv", "requirements.txt")
}

/// The Python interpreter of a virtual environment with the pinned
/// `prometheus-client` package, made on first use.
pub fn metrics_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    venv_under_target(
        &PYTHON,
        "prometheus-client-venv",
        "metrics-requirements.txt",
    )
}

/// The interpreter of the virtual environment `name` under the target
/// directory, with the packages pinned in `tests/python/<requirements>`,
/// made once into `cell`.
fn venv_under_target(
    cell: &'static OnceLock<PathBuf>,
    name: &str,
    requirements: &str,
) -> &'static Path {
    cell.get_or_init(|| {
        let requirements = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/python")
            .join(requirements);
        venv::venv_python(Path::new(env!("CARGO_TARGET_TMPDIR")), name, &requirements)
    })
}

/// The Python interpreter of a virtual environment with the pinned `mcp`
/// package (the official MCP SDK), made on first use.
pub fn mcp_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    venv_under_target(&PYTHON, "mcp-venv", "mcp-requirements.txt")
}

/// A directory of its own under the target directory, for one test's
/// files; emptied first.
pub fn scratch_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gateway-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's directory");
    dir
}

/// `python/mcp_server.py`, the MCP server written with the official SDK.
pub fn mcp_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_server.py")
}

/// The command line that runs the SDK server over stdio, logging to `log`.
pub fn mcp_stdio_command(log: &Path) -> Vec<String> {
    vec![
        mcp_python().display().to_string(),
        mcp_server_script().display().to_string(),
        "--log".to_owned(),
        log.display().to_string(),
        "stdio".to_owned(),
    ]
}

/// The SDK server over streamable HTTP on 127.0.0.1, killed on drop.
pub struct McpServer {
    child: Child,
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// What the server records, one JSON object a line.
    pub log: PathBuf,
}

impl McpServer {
    /// Starts the server, logging to `log`, with `extra` arguments (such as
    /// `--hang-on-cancel`), and waits for its address.
    pub fn http(log: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(mcp_python())
            .arg(mcp_server_script())
            .arg("--log")
            .arg(log)
            .arg("http")
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the MCP server starts");
        let line = first_stdout_line(&mut child)
            .recv_timeout(STARTUP_BOUND)
            .ok()
            .flatten()
            .expect("the MCP server prints its address");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("a `listening on` line, not {line:?}"))
            .to_owned();
        Self {
            child,
            url,
            log: log.to_owned(),
        }
    }

    /// Kills the server and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The events an SDK server recorded in `log` so far.
pub fn mcp_events(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// The events in `log` once `enough` says so, waiting at most `bound`;
/// fails the test with the events so far when it never does.
pub fn wait_for_mcp_events(
    log: &Path,
    bound: Duration,
    enough: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let give_up = Instant::now() + bound;
    loop {
        let events = mcp_events(log);
        if enough(&events) {
            return events;
        }
        assert!(
            Instant::now() < give_up,
            "the MCP server did not record what was awaited within {bound:?}; it recorded {events:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The recorded events of kind `event`.
pub fn events_of<'a>(
    events: &'a [serde_json::Value],
    event: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    events.iter().filter(move |e| e["event"] == event)
}

/// Now, in Unix seconds: the clock the SDK server records with.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// Where the first of `lines` that holds every one of `needles` is, to
/// compare the order of the gateway's steps. Fails the test, showing
/// `lines`, when no line does.
pub fn position_of(lines: &[String], needles: &[&str]) -> usize {
    lines
        .iter()
        .position(|line| needles.iter().all(|needle| line.contains(needle)))
        .unwrap_or_else(|| panic!("no line with {needles:?}: {lines:#?}"))
}

/// Runs one check of `python/client_checks.py` against `gateway`; what it
/// saw, as JSON. Fails the test with the check's output when it fails.
pub fn python_check(gateway: &Gateway, check: &str) -> serde_json::Value {
    PythonCheck::start(gateway, check).finish(gateway)
}

/// A check of `python/client_checks.py` under way. A check that has to wait
/// for something only the gateway's log shows (a tool call started) waits
/// for a line on its standard input: [`go_on`](Self::go_on).
pub struct PythonCheck {
    child: Child,
    check: String,
}

impl PythonCheck {
    /// Starts `check` against `gateway`.
    pub fn start(gateway: &Gateway, check: &str) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_checks.py");
        let child = Command::new(python())
            .arg(script)
            .args([gateway.base.as_str(), check])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the python check runs");
        Self {
            child,
            check: check.to_owned(),
        }
    }

    /// Lets a check that waits on its standard input go on.
    pub fn go_on(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("stdin is piped");
        writeln!(stdin).expect("the python check reads its standard input");
    }

    /// Waits for the check to end; what it saw, as JSON. Fails the test with
    /// the check's output when it fails.
    pub fn finish(mut self, gateway: &Gateway) -> serde_json::Value {
        // A check still waiting on its input reads the end of it and goes on.
        drop(self.child.stdin.take());
        let output = self
            .child
            .wait_with_output()
            .expect("the python check ends");
        let check = self.check;
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "python check `{check}` failed\nstdout: {stdout}\nstderr: {}\ngateway log:\n{}",
            String::from_utf8_lossy(&output.stderr),
            gateway.log_text()
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
    }
}

/// Starts a streamed completion from `model`; the response, its body
/// unread.
pub async fn open_stream(client: &reqwest::Client, base: &str, model: &str) -> reqwest::Response {
    let body = serde_json::json!({
        "model": model,
        "messages": [{ "role": "user", "content": "What is a deadline?" }],
        "stream": true,
    });
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the stream starts");
    assert_eq!(response.status(), 200, "streams of {model} are accepted");
    response
}

/// The rest of a response's body, as text; what arrived before an error.
pub async fn read_to_end(response: &mut reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The answer text carried by a stream's chunks.
pub fn answer_of(body: &str) -> String {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// A reverse proxy on 127.0.0.1 in front of one HTTP server, that can be
/// made to fail: then it answers every request with `503` itself and counts
/// them. It runs on its own runtime, so a test thread that blocks (on a
/// gateway's startup, say) does not stop it.
pub struct FlakyProxy {
    /// `http://127.0.0.1:<port>`, where the proxy listens.
    pub base: String,
    state: Arc<ProxyState>,
    runtime: Option<tokio::runtime::Runtime>,
}

#[derive(Default)]
struct ProxyState {
    failing: std::sync::atomic::AtomicBool,
    failures: std::sync::atomic::AtomicU64,
}

impl FlakyProxy {
    /// A proxy that passes every request on to `upstream`
    /// (`http://host:port`), bodies streamed both ways.
    pub fn start(upstream: &str) -> Self {
        use axum::body::Body;
        use axum::extract::{Request, State};
        use axum::http::StatusCode;
        use axum::response::{IntoResponse, Response};
        use futures_util::TryStreamExt;
        use std::sync::atomic::Ordering;

        type Shared = (Arc<ProxyState>, reqwest::Client, String);

        async fn pass_on(
            State((state, client, upstream)): State<Shared>,
            request: Request,
        ) -> Response {
            if state.failing.load(Ordering::SeqCst) {
                state.failures.fetch_add(1, Ordering::SeqCst);
                return (StatusCode::SERVICE_UNAVAILABLE, "the tool host is failing")
                    .into_response();
            }
            let (parts, body) = request.into_parts();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let mut outbound = client
                .request(parts.method, format!("{upstream}{path}"))
                .body(reqwest::Body::wrap_stream(body.into_data_stream()));
            for (name, value) in &parts.headers {
                if name != axum::http::header::HOST {
                    outbound = outbound.header(name, value);
                }
            }
            match outbound.send().await {
                Ok(answer) => {
                    let mut response = Response::builder().status(answer.status());
                    for (name, value) in answer.headers() {
                        response = response.header(name, value);
                    }
                    let body =
                        Body::from_stream(answer.bytes_stream().map_err(std::io::Error::other));
                    response.body(body).expect("a response from a valid one")
                }
                Err(err) => (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
            }
        }

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the proxy's runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener
            .set_nonblocking(true)
            .expect("a nonblocking listener");
        let base = format!("http://{}", listener.local_addr().expect("its address"));
        let state = Arc::new(ProxyState::default());
        let shared: Shared = (
            Arc::clone(&state),
            reqwest::Client::new(),
            upstream.to_owned(),
        );
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            let router = axum::Router::new().fallback(pass_on).with_state(shared);
            let _ = axum::serve(listener, router).await;
        });
        Self {
            base,
            state,
            runtime: Some(runtime),
        }
    }

    /// From now on, every request gets `503`.
    pub fn fail(&self) {
        self.state
            .failing
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The `503`s answered so far.
    pub fn failures(&self) -> u64 {
        self.state
            .failures
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for FlakyProxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The time from `earlier` to `later`, two lines of the gateway's log, by
/// the timestamps the gateway wrote on them (`2026-12-05T08:41:00.123456Z`,
/// first on each line: its log has no colours when stderr is a pipe):
/// unlike the times this process read them, those do not move when a
/// reader is slow to be scheduled.
pub fn logged_between(earlier: &str, later: &str) -> Duration {
    const DAY: Duration = Duration::from_secs(24 * 60 * 60);
    let (earlier, later) = (time_of_day(earlier), time_of_day(later));
    // Across midnight, the later line's time of day is the smaller.
    later
        .checked_sub(earlier)
        .unwrap_or_else(|| later + DAY - earlier)
}

/// The time since midnight a log line's timestamp says.
fn time_of_day(line: &str) -> Duration {
    let time = line
        .get(11..)
        .and_then(|rest| rest.split_once('Z'))
        .and_then(|(time, _)| {
            let mut parts = time.split(':');
            let hours: u64 = parts.next()?.parse().ok()?;
            let minutes: u64 = parts.next()?.parse().ok()?;
            let seconds: f64 = parts.next()?.parse().ok()?;
            Some(
                Duration::from_secs((hours * 60 + minutes) * 60) + Duration::from_secs_f64(seconds),
            )
        });
    time.unwrap_or_else(|| panic!("no `YYYY-MM-DDTHH:MM:SS.ffffffZ` timestamp in {line:?}"))
}
