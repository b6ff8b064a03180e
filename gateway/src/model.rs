//! The scripted model provider: runs a [`Script`] on a task of its own and
//! sends what it says to the response being written.

use std::time::Duration;

use serde_json::json;
use timebox::registry::{CancellationToken, ToolCalls};
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
}

/// One run of a scripted model for one request.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) script: Script,
    pub(crate) tools: Tools,
    /// The request's tool calls (DESIGN R4): the model registers a call
    /// when it decides on it, the task that runs it claims it by id.
    pub(crate) calls: ToolCalls,
    pub(crate) pending: PendingCalls,
    /// The request's token: the run stops when it is cancelled.
    pub(crate) cancelled: CancellationToken,
    /// The stream's watchdog, suspended during tool calls; `None` when the
    /// answer is not streamed.
    pub(crate) watchdog: Option<WatchdogHandle>,
    pub(crate) out: mpsc::Sender<Output>,
}

impl Run {
    /// Runs the script on a task of its own. The output ends (the sender
    /// drops) when the script is over or the request's token is cancelled.
    pub(crate) fn spawn(self) {
        let cancelled = self.cancelled.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = cancelled.cancelled() => {}
                () = self.run() => {}
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
            Script::Tool { work } => {
                self.say("Let me run the slow task first. ", TOKEN_GAP)
                    .await;
                let result = match self.use_tool(work).await {
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
    async fn use_tool(&self, work: Duration) -> Result<String, ToolError> {
        self.calls.register(Some(CALL_ID));
        let _suspended = self.watchdog.as_ref().map(WatchdogHandle::suspend);
        let runner = tokio::spawn(run_tool_call(
            self.tools.clone(),
            self.calls.clone(),
            self.pending.clone(),
            work,
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
    work: Duration,
    out: mpsc::Sender<Output>,
) -> Result<String, ToolError> {
    let call = calls
        .claim(Some(CALL_ID))
        .ok_or_else(|| ToolError::Failed(format!("no pending tool call `{CALL_ID}`")))?;
    let serde_json::Value::Object(arguments) = json!({ "seconds": work.as_secs() }) else {
        unreachable!("a `json!` object literal is an object")
    };
    tools
        .call(SLOW_TASK, arguments, &call, &pending, |progress| {
            // Progress is news, not data: when the response is behind,
            // skipping a report loses nothing.
            let _ = out.try_send(Output::Progress(progress));
        })
        .await
}
