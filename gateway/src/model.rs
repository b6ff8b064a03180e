//! The scripted model provider: runs a [`Script`] on a task of its own and
//! sends what it says to the response being written.

use std::fmt::Write as _;
use std::time::Duration;

use rmcp::model::JsonObject;
use serde_json::json;
use timebox::registry::{CancellationToken, RequestGuard, ToolCalls};
use timebox::watchdog::WatchdogHandle;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::script::{tokens, Script, ToolScript, ANSWER};
use crate::tools::{Leases, PendingCalls, Progress, ToolError, SLOW_TASK};

/// The gap between tokens of every script but `scripted-slow-<N>s`.
const TOKEN_GAP: Duration = Duration::from_millis(40);

/// One piece of a model's output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    /// Text of the answer.
    Token(String),
    /// A tool the model is waiting for made progress.
    Progress(Progress),
    /// The answer is complete. Output that ends without it was cut off.
    Done,
    /// The answer cannot go on: an MCP server it needed failed. Said as
    /// an error event.
    Failed(String),
}

/// Where a run's tools run: the request's sessions, the server and
/// whether its calls suspend the stream's inactivity timer.
#[derive(Debug)]
pub(crate) struct Tooling {
    pub(crate) leases: Leases,
    pub(crate) server: String,
    pub(crate) suspend_inactivity: bool,
}

/// One run of a scripted model for one request.
#[derive(Debug)]
pub(crate) struct Run {
    script: Script,
    tooling: Tooling,
    /// The request's tool calls (DESIGN R4): the model registers a call
    /// when it decides on it, the task that runs it claims it by id.
    calls: ToolCalls,
    pending: PendingCalls,
    /// The request's token: the run stops when it is cancelled.
    cancelled: CancellationToken,
    /// The stream's watchdog, suspended during tool calls; `None` when the
    /// answer is not streamed.
    watchdog: Option<WatchdogHandle>,
    out: mpsc::Sender<Output>,
    /// The request's span, which the run's tasks log in.
    span: tracing::Span,
}

impl Run {
    /// A run of `script` for the request of `guard`, saying its output to
    /// `out`, its tasks logging in `span`.
    pub(crate) fn new(
        script: Script,
        tooling: Tooling,
        guard: &RequestGuard,
        out: mpsc::Sender<Output>,
        span: tracing::Span,
    ) -> Self {
        Self {
            script,
            tooling,
            calls: guard.tool_calls(),
            pending: PendingCalls::default(),
            cancelled: guard.token(),
            watchdog: None,
            out,
            span,
        }
    }

    /// Suspends `watchdog` while a tool call runs.
    pub(crate) fn watchdog(mut self, watchdog: WatchdogHandle) -> Self {
        self.watchdog = Some(watchdog);
        self
    }

    /// The run's tool calls that have no result yet.
    pub(crate) fn pending(&self) -> &PendingCalls {
        &self.pending
    }

    /// Runs the script on a task of its own. The output ends (the sender
    /// drops) when the script is over, after [`Output::Done`], or when the
    /// request's token is cancelled.
    pub(crate) fn spawn(self) {
        let cancelled = self.cancelled.clone();
        let span = self.span.clone();
        tokio::spawn(
            async move {
                tokio::select! {
                    biased;
                    () = cancelled.cancelled() => {}
                    () = self.run() => {
                        let _ = self.out.send(Output::Done).await;
                    }
                }
            }
            .instrument(span),
        );
    }

    async fn run(&self) {
        match &self.script {
            Script::Fast => self.say(ANSWER, TOKEN_GAP).await,
            Script::Thinker { think } => {
                tokio::time::sleep(*think).await;
                self.say(ANSWER, TOKEN_GAP).await;
            }
            Script::Slow { over } => {
                let count = u32::try_from(tokens(ANSWER).len()).unwrap_or(u32::MAX);
                self.say(ANSWER, *over / count).await;
            }
            Script::Hang => {
                self.say("Let me think about ", TOKEN_GAP).await;
                std::future::pending::<()>().await;
            }
            Script::Tool(tool) => {
                let intro = if tool.calls == 1 {
                    "Let me run the slow task first. "
                } else {
                    "Let me run the slow tasks first. "
                };
                self.say(intro, TOKEN_GAP).await;
                let mut said = String::new();
                for result in self.use_tools(tool).await {
                    match result {
                        Ok(text) => {
                            let _ = write!(said, "The slow task says: {text}. ");
                        }
                        Err(err @ ToolError::Server { .. }) => {
                            let _ = self.out.send(Output::Failed(err.for_client())).await;
                            return;
                        }
                        Err(err) => {
                            let _ = write!(said, "The slow task gave no result ({err}). ");
                        }
                    }
                }
                self.say(&said, TOKEN_GAP).await;
                self.say(ANSWER, TOKEN_GAP).await;
            }
        }
    }

    /// Sends `text` a token at a time, `gap` apart, the first at once.
    async fn say(&self, text: &str, gap: Duration) {
        for (i, token) in tokens(text).into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(gap).await;
            }
            if self.out.send(Output::Token(token)).await.is_err() {
                return;
            }
        }
    }

    /// Decides on `tool.calls` `slow_task` calls (ids `call_1`, …), lets a
    /// task of its own run each, all at once, and waits for the results,
    /// in order, with the inactivity timer suspended unless the server's
    /// settings say not to: a tool at work is not a model gone silent.
    async fn use_tools(&self, tool: &ToolScript) -> Vec<Result<String, ToolError>> {
        let ids: Vec<String> = (1..=tool.calls).map(|n| format!("call_{n}")).collect();
        for id in &ids {
            self.calls.register(Some(id.as_str()));
        }
        let _suspended = self
            .watchdog
            .as_ref()
            .filter(|_| self.tooling.suspend_inactivity)
            .map(WatchdogHandle::suspend);
        let runners: Vec<_> = ids
            .into_iter()
            .map(|id| {
                tokio::spawn(
                    run_tool_call(
                        id,
                        self.tooling.leases.clone(),
                        self.tooling.server.clone(),
                        self.calls.clone(),
                        self.pending.clone(),
                        arguments(tool.work, tool.progress),
                        self.out.clone(),
                    )
                    .instrument(self.span.clone()),
                )
            })
            .collect();
        let mut results = Vec::with_capacity(runners.len());
        for runner in runners {
            results.push(runner.await.unwrap_or_else(|err| {
                // The client hears that there is no result, not the
                // gateway's panic message: that goes to the log.
                tracing::error!(%err, "a tool call's task ended without a result");
                Err(ToolError::Failed(
                    "the gateway could not finish the call; its log says why".to_owned(),
                ))
            }));
        }
        results
    }
}

/// The running side of a tool call: claims the call the model registered
/// as `id` and makes it on the request's session with `server`, passing
/// progress on as output. A server that fails the call loses the session.
async fn run_tool_call(
    id: String,
    leases: Leases,
    server: String,
    calls: ToolCalls,
    pending: PendingCalls,
    arguments: JsonObject,
    out: mpsc::Sender<Output>,
) -> Result<String, ToolError> {
    let call = calls
        .claim(Some(id.as_str()))
        .ok_or_else(|| ToolError::Failed(format!("no pending tool call `{id}`")))?;
    let on_progress = |progress| {
        // Progress is news, not data: when the response is behind,
        // skipping a report loses nothing.
        let _ = out.try_send(Output::Progress(progress));
    };
    // Waiting for a session (all of the server's may be in use) ends with
    // the call.
    let token = call.token();
    let session = tokio::select! {
        session = leases.session(&server) => session,
        () = token.cancelled() => Err(ToolError::Cancelled),
    };
    let result = match session {
        Ok(session) => {
            session
                .call(&server, SLOW_TASK, arguments, &call, &pending, on_progress)
                .await
        }
        Err(err) => Err(err),
    };
    match &result {
        Err(err @ ToolError::Server { .. }) => {
            tracing::error!(server, call_id = id, %err, "an MCP server failed a tool call");
            leases.evict_broken(&server, "its connection failed");
        }
        // R3's eviction, which the request's cleanup could not know to do.
        Err(ToolError::CancelledLate) => {
            leases.evict_broken(
                &server,
                "its request ended while a tool call was sent on it",
            );
        }
        _ => {}
    }
    result
}

/// The arguments of a `slow_task` call.
fn arguments(work: Duration, progress: bool) -> JsonObject {
    JsonObject::from_iter([
        ("seconds".to_owned(), json!(work.as_secs())),
        ("progress".to_owned(), json!(progress)),
    ])
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use timebox::config::Config;
    use timebox::registry::{CancellationToken, ToolCalls};
    use tokio::sync::mpsc;

    use super::{arguments, run_tool_call};
    use crate::settings::Server;
    use crate::tools::{Leases, PendingCalls, ToolError, Tools};

    /// R3: a call that reaches the server after its request's cleanup ran
    /// (which found no call to cancel, so evicted nothing) cancels itself
    /// there, and the session it went out on is not given back for the
    /// next request: the next one opens a session of its own.
    #[tokio::test(start_paused = true)]
    async fn a_call_sent_after_its_requests_cleanup_ran_loses_its_session() {
        let server = Server::builtin_for_tests(1);
        let tools = Tools::start(vec![server], &Config::default())
            .await
            .expect("the built-in server starts");
        let leases = Leases::new(tools.clone());
        let calls = ToolCalls::new(&CancellationToken::new());
        calls.register(Some("call-1"));
        let pending = PendingCalls::default();
        let cleanup = pending.take_cancel_notices("the request ended");
        assert!(cleanup.is_empty(), "no call was waiting yet");
        let (out, _output) = mpsc::channel(8);

        let result = run_tool_call(
            "call-1".to_owned(),
            leases.clone(),
            "here".to_owned(),
            calls,
            pending,
            arguments(Duration::from_secs(1), false),
            out,
        )
        .await;
        assert!(
            matches!(result, Err(ToolError::CancelledLate)),
            "{result:?}"
        );
        drop(leases);

        let next = Leases::new(tools);
        let session = next.session("here").await.expect("a session");
        assert!(
            session.linger().is_zero(),
            "a new session, not the one the cancelled call went out on"
        );
    }
}
