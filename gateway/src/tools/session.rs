//! [`Tools`]: the gateway's MCP client, connected to the in-process tool
//! server.

use std::fmt;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, JsonObject, ProgressNotificationParam, Request,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use timebox::registry::{RemoteCleanup, ToolCall};
use tokio::task::JoinHandle;

use super::{PendingCalls, ToolServer};

/// Bytes the in-memory pipe to the tool server buffers each way.
const PIPE_BUFFER: usize = 64 * 1024;

/// The connection to the tool server. Clones share it.
#[derive(Clone)]
pub(crate) struct Tools {
    service: Arc<RunningService<RoleClient, ProgressClient>>,
    /// The tool server's task, until [`close`](Tools::close) waits for it.
    server: Arc<Mutex<Option<JoinHandle<()>>>>,
}

/// The client side's handler: passes progress notifications on to whoever
/// waits for that call's progress.
#[derive(Debug, Default)]
struct ProgressClient {
    progress: ProgressDispatcher,
}

impl ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }
}

/// A tool's report of how far it got.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub(crate) done: f64,
    pub(crate) total: Option<f64>,
}

/// Why a tool call gave no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    /// The call's token was cancelled; the request's remote cleanup tells
    /// the tool server.
    #[error("tool call cancelled")]
    Cancelled,
    /// The tool server or the connection failed.
    #[error("tool call failed: {0}")]
    Failed(String),
}

impl From<ServiceError> for ToolError {
    fn from(err: ServiceError) -> Self {
        Self::Failed(err.to_string())
    }
}

impl Tools {
    /// Starts the tool server on a task of its own and connects to it (the
    /// MCP `initialize` handshake).
    ///
    /// # Errors
    ///
    /// When the handshake fails.
    pub(crate) async fn start() -> Result<Self, ToolError> {
        let (server_io, client_io) = tokio::io::duplex(PIPE_BUFFER);
        let server = tokio::spawn(async move {
            match ToolServer.serve(server_io).await {
                Ok(running) => {
                    if let Err(err) = running.waiting().await {
                        tracing::error!(target: "tool_server", %err, "tool server stopped");
                    }
                }
                Err(err) => {
                    tracing::error!(target: "tool_server", %err, "tool server did not start")
                }
            }
        });
        let service = ProgressClient::default()
            .serve(client_io)
            .await
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        Ok(Self {
            service: Arc::new(service),
            server: Arc::new(Mutex::new(Some(server))),
        })
    }

    /// Closes the connection and waits, at most `bound`, for the tool server
    /// to finish: it still reads what was sent before the close, so the
    /// cancellation notices of a shutdown reach it.
    pub(crate) async fn close(&self, bound: Duration) {
        self.service.cancellation_token().cancel();
        let server = self
            .server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(server) = server {
            if tokio::time::timeout(bound, server).await.is_err() {
                tracing::warn!(target: "tool_server", ?bound, "tool server still busy; leaving it");
            }
        }
    }

    /// Calls the tool `name` for `call` (claimed from the request's
    /// [`ToolCalls`](timebox::registry::ToolCalls)), reporting its progress
    /// to `on_progress`, until it answers or `call`'s token is cancelled.
    ///
    /// While the call waits it is in `pending`; it leaves when the result
    /// arrives. A cancelled call stays there, for the request's remote
    /// cleanup to cancel at the tool server.
    ///
    /// # Errors
    ///
    /// [`ToolError::Cancelled`] when the token is cancelled first;
    /// [`ToolError::Failed`] when the server or the tool fails.
    pub(crate) async fn call(
        &self,
        name: &'static str,
        arguments: JsonObject,
        call: &ToolCall,
        pending: &PendingCalls,
        mut on_progress: impl FnMut(Progress),
    ) -> Result<String, ToolError> {
        let token = call.token();
        if token.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut params = CallToolRequestParams::new(name);
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let peer = self.service.peer().clone();
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await?;
        let request_id = handle.id.clone();
        let call_id = call.id().unwrap_or("(no id)");
        if pending.sent(call_id, request_id.clone(), peer).is_err() {
            // The request ended while the call was being sent, after its
            // cleanup ran: nobody else will cancel this one.
            let reason = Some("the request ended".to_owned());
            let cancelled = handle.cancel(reason);
            let _ = tokio::time::timeout(RemoteCleanup::DEFAULT_PER_NOTICE, cancelled).await;
            return Err(ToolError::Cancelled);
        }
        let mut updates = self
            .service
            .service()
            .progress
            .subscribe(handle.progress_token.clone())
            .await;
        let mut response = pin!(handle.await_response());
        loop {
            tokio::select! {
                biased;
                () = token.cancelled() => return Err(ToolError::Cancelled),
                response = &mut response => {
                    pending.answered(&request_id);
                    return text_of(response?);
                }
                Some(update) = updates.next() => on_progress(Progress {
                    done: update.progress,
                    total: update.total,
                }),
            }
        }
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools").finish_non_exhaustive()
    }
}

/// The text a tool answered with, or its error.
fn text_of(result: ServerResult) -> Result<String, ToolError> {
    match result {
        ServerResult::CallToolResult(result) => {
            let text: String = result
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
                .collect();
            if result.is_error == Some(true) {
                Err(ToolError::Failed(text))
            } else {
                Ok(text)
            }
        }
        other => Err(ToolError::Failed(format!(
            "expected a tool result, got {other:?}"
        ))),
    }
}
