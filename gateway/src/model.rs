//! The scripted model provider: runs a [`Script`] on a task of its own and
//! sends what it says to the response being written.

use std::time::Duration;

use rmcp::model::JsonObject;
use serde_json::json;
use timebox::registry::{CancellationToken, RequestGuard, ToolCalls};
use timebox::watchdog::WatchdogHandle;
use tokio::sync::mpsc;

use crate::script::{tokens, Script, ANSWER};
use crate::tools::{PendingCalls, Progress, ToolError, Tools, SLOW_TASK};

/// The gap between tokens of every script but `scripted-slow-<N>s`.
const TOKEN_GAP: Duration = Duration::from_millis(40);

/// The tool-call id of a script's one tool call.
const CALL_ID: &str = "call_1";

/// One piece of a model's output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    /// Text of the answer.
    Token(String),
    /// A tool the model is waiting for made progress.
    Progress(Progress),
    /// The answer is complete. Output that ends without it was cut off.
    Done,
}

/// One run of a scripted model for one request.
#[derive(Debug)]
pub(crate) struct Run {
    script: Script,
    tools: Tools,
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
}

impl Run {
    /// A run of `script` for the request of `guard`, saying its output to
    /// `out`.
    pub(crate) fn new(
        script: Script,
        tools: Tools,
        guard: &RequestGuard,
        out: mpsc::Sender<Output>,
    ) -> Self {
        Self {
            script,
            tools,
            calls: guard.tool_calls(),
            pending: PendingCalls::default(),
            cancelled: guard.token(),
            watchdog: None,
            out,
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
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = cancelled.cancelled() => {}
                () = self.run() => {
                    let _ = self.out.send(Output::Done).await;
                }
            }
        });
    }

    async fn run(&self) {
        match self.script {
            Script::Fast => self.say(ANSWER, TOKEN_GAP).await,
            Script::Thinker { think } => {
                tokio::time::sleep(think).await;
                self.say(ANSWER, TOKEN_GAP).await;
            }
            Script::Slow { over } => {
                let count = u32::try_from(tokens(ANSWER).len()).unwrap_or(u32::MAX);
                self.say(ANSWER, over / count).await;
            }
            Script::Hang => {
                self.say("Let me think about ", TOKEN_GAP).await;
                std::future::pending::<()>().await;
            }
            Script::Tool { work, progress } => {
                self.say("Let me run the slow task first. ", TOKEN_GAP)
                    .await;
                let result = match self.use_tool(work, progress).await {
                    Ok(text) => format!("The slow task says: {text}. "),
                    Err(err) => format!("The slow task gave no result ({err}). "),
                };
                self.say(&result, TOKEN_GAP).await;
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

    /// Decides on a `slow_task` call of `work`, lets a task of its own run
    /// it, and waits for the result with the inactivity timer suspended:
    /// a tool at work is not a model gone silent.
    async fn use_tool(&self, work: Duration, progress: bool) -> Result<String, ToolError> {
        self.calls.register(Some(CALL_ID));
        let _suspended = self.watchdog.as_ref().map(WatchdogHandle::suspend);
        let runner = tokio::spawn(run_tool_call(
            self.tools.clone(),
            self.calls.clone(),
            self.pending.clone(),
            arguments(work, progress),
            self.out.clone(),
        ));
        runner
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?
    }
}

/// The running side of a tool call: claims the call the model registered
/// and makes it, passing progress on as output.
async fn run_tool_call(
    tools: Tools,
    calls: ToolCalls,
    pending: PendingCalls,
    arguments: JsonObject,
    out: mpsc::Sender<Output>,
) -> Result<String, ToolError> {
    let call = calls
        .claim(Some(CALL_ID))
        .ok_or_else(|| ToolError::Failed(format!("no pending tool call `{CALL_ID}`")))?;
    tools
        .call(SLOW_TASK, arguments, &call, &pending, |progress| {
            // Progress is news, not data: when the response is behind,
            // skipping a report loses nothing.
            let _ = out.try_send(Output::Progress(progress));
        })
        .await
}

/// The arguments of a `slow_task` call.
fn arguments(work: Duration, progress: bool) -> JsonObject {
    JsonObject::from_iter([
        ("seconds".to_owned(), json!(work.as_secs())),
        ("progress".to_owned(), json!(progress)),
    ])
}
