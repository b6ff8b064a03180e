//! [`Session`]: one MCP client session with one server, over any of the
//! gateway's transports.

use std::pin::pin;
use std::time::Duration;

use futures_util::StreamExt;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, JsonObject, ProgressNotificationParam, Request,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use timebox::registry::{RemoteCleanup, ToolCall};
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::error::said;
#[cfg(unix)]
use super::group::leading_a_group;
use super::notice::NoticeClock;
use super::{PendingCalls, TimeboxHttp, ToolError, ToolServer};
use crate::settings::{Server, Transport};

/// Bytes the in-memory pipe to the built-in server buffers each way.
const PIPE_BUFFER: usize = 64 * 1024;

/// How long a dropped session keeps its place while the SDK ends it: a
/// stdio server that does not exit when its stdin closes gets SIGTERM
/// 3 s later and SIGKILL 3 s after that, so its process is gone well
/// within this.
const END_BOUND: Duration = Duration::from_secs(10);

/// One initialized MCP session. Several calls may run on it at once; each
/// is told apart by its JSON-RPC request id.
///
/// Dropped, it ends, and gives up its place among its server's
/// `max_sessions` once the SDK's task for it has ended (see `Drop`).
pub(crate) struct Session {
    /// The SDK's session: `None` only once the session is dropped, when it
    /// goes to the task that waits for it to end.
    service: Option<RunningService<RoleClient, ProgressClient>>,
    /// The built-in server's task, when this session is with it.
    builtin: Option<JoinHandle<()>>,
    noticed: NoticeClock,
    /// Its place among the server's `max_sessions`, given up once the
    /// session has ended, and where the task that ends it, once dropped,
    /// is tracked (its pool's sessions being ended).
    place: Option<(OwnedSemaphorePermit, TaskTracker)>,
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

impl Session {
    /// Opens a session with `server`: starts the built-in server or the
    /// child process, or connects over HTTP through `http`, then the MCP
    /// `initialize` handshake, all within the server's `connect_timeout`.
    ///
    /// # Errors
    ///
    /// [`ToolError::Server`], naming the server and where it was looked for.
    pub(crate) async fn open(server: &Server, http: &TimeboxHttp) -> Result<Self, ToolError> {
        let unreachable = |err: &dyn std::fmt::Display| {
            ToolError::server(
                &server.name,
                format_args!("{} cannot be reached: {err}", server.transport),
            )
        };
        let opening = async {
            let client = ProgressClient::default();
            let (service, builtin) = match &server.transport {
                Transport::Builtin => {
                    let (server_io, client_io) = tokio::io::duplex(PIPE_BUFFER);
                    let builtin = tokio::spawn(run_builtin(server_io));
                    (client.serve(client_io).await, Some(builtin))
                }
                Transport::Http(url) => {
                    let transport = StreamableHttpClientTransport::with_client(
                        http.clone().opening_within(server.connect_timeout),
                        StreamableHttpClientTransportConfig::with_uri(url.as_str()),
                    );
                    (client.serve(transport).await, None)
                }
                Transport::Stdio { program, args } => {
                    let mut command = tokio::process::Command::new(program);
                    command.args(args);
                    #[cfg(unix)]
                    let command = leading_a_group(command);
                    let child = TokioChildProcess::new(command).map_err(|e| unreachable(&e))?;
                    (client.serve(child).await, None)
                }
            };
            Ok(Self {
                service: Some(service.map_err(|e| unreachable(&e))?),
                builtin,
                noticed: NoticeClock::default(),
                place: None,
            })
        };
        tokio::time::timeout(server.connect_timeout, opening)
            .await
            .map_err(|_| {
                unreachable(&format_args!(
                    "no MCP session within {:?} (`connect_timeout_ms`)",
                    server.connect_timeout
                ))
            })?
    }

    /// The SDK's session.
    fn service(&self) -> &RunningService<RoleClient, ProgressClient> {
        // Taken only by `drop`.
        self.service
            .as_ref()
            .expect("a session holds the SDK's until it is dropped")
    }

    /// The SDK's session, to close.
    fn service_mut(&mut self) -> &mut RunningService<RoleClient, ProgressClient> {
        self.service
            .as_mut()
            .expect("a session holds the SDK's until it is dropped")
    }

    /// The names of the tools the server lists.
    ///
    /// # Errors
    ///
    /// When the server does not answer `tools/list`.
    pub(crate) async fn tool_names(&self) -> Result<Vec<String>, ServiceError> {
        let tools = self.service().peer().list_all_tools().await?;
        Ok(tools
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect())
    }

    /// The session, holding `place` among its server's sessions until it
    /// has ended, once dropped, on a task `ending` tracks.
    pub(crate) fn holding(mut self, place: OwnedSemaphorePermit, ending: TaskTracker) -> Self {
        self.place = Some((place, ending));
        self
    }

    /// Whether the session's connection has gone: ended from here, or by
    /// the server (its process exited, its pipe or stream closed), which
    /// ends the SDK's task without cancelling the session's token.
    pub(crate) fn is_closed(&self) -> bool {
        let service = self.service();
        service.is_closed() || service.peer().is_transport_closed()
    }

    /// Ends the session without waiting: its task closes the transport
    /// (for HTTP, the session is deleted; a child process is asked to exit).
    pub(crate) fn end(&self) {
        self.service().cancellation_token().cancel();
    }

    /// Records a cancellation notice sent on the session just now.
    #[cfg(test)]
    pub(crate) fn noticed_now(&self) {
        self.noticed.mark();
    }

    /// How long the session should stay open for the notices just sent on
    /// it to be acted on: zero when none was sent in the last
    /// [`NOTICE_LINGER`](super::notice::NOTICE_LINGER).
    pub(crate) fn linger(&self) -> Duration {
        self.noticed.left()
    }

    /// Ends the session once it has lingered after its last notice (at
    /// most [`NOTICE_LINGER`](super::notice::NOTICE_LINGER)), and waits, at most `bound` more, for it to
    /// close (the built-in server's task included): the server still reads
    /// what was sent before, so the cancellation notices of a shutdown
    /// reach it.
    pub(crate) async fn close(mut self, bound: Duration) -> bool {
        tokio::time::sleep(self.linger()).await;
        let give_up = Instant::now() + bound;
        let closed = self
            .service_mut()
            .close_with_timeout(bound)
            .await
            .is_ok_and(|quit| quit.is_some());
        match self.builtin.take() {
            Some(builtin) => closed && tokio::time::timeout_at(give_up, builtin).await.is_ok(),
            None => closed,
        }
    }

    /// Calls the tool `name` of `server` for `call` (claimed from the
    /// request's [`ToolCalls`](timebox::registry::ToolCalls)), reporting
    /// its progress to `on_progress`, until it answers or `call`'s token is
    /// cancelled.
    ///
    /// While the call waits it is in `pending`; it leaves when the result
    /// arrives. A cancelled call stays there, for the request's remote
    /// cleanup to cancel at the server.
    ///
    /// # Errors
    ///
    /// [`ToolError::Cancelled`] when the token is cancelled first, and
    /// [`ToolError::CancelledLate`] when the request's cleanup ran while
    /// the call was being sent;
    /// [`ToolError::Failed`] when the tool fails; [`ToolError::Server`]
    /// when the session does.
    pub(crate) async fn call(
        &self,
        server: &str,
        name: &str,
        arguments: JsonObject,
        call: &ToolCall,
        pending: &PendingCalls,
        mut on_progress: impl FnMut(Progress),
    ) -> Result<String, ToolError> {
        let token = call.token();
        if token.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let broken =
            |err: ServiceError| ToolError::server(server, format_args!("failed: {}", said(&err)));
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let peer = self.service().peer().clone();
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(broken)?;
        let request_id = handle.id.clone();
        let call_id = call.id().unwrap_or("(no id)");
        let noticed = self.noticed.clone();
        if pending
            .sent(server, call_id, request_id.clone(), peer, noticed)
            .is_err()
        {
            self.noticed.mark();
            // The request ended while the call was being sent, after its
            // cleanup ran: nobody else will cancel this one.
            let reason = Some("the request ended".to_owned());
            let cancelled = handle.cancel(reason);
            let _ = tokio::time::timeout(RemoteCleanup::DEFAULT_PER_NOTICE, cancelled).await;
            return Err(ToolError::CancelledLate);
        }
        let mut updates = self
            .service()
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
                    return match response {
                        Ok(result) => text_of(server, result),
                        // The tool's own error, sent as a JSON-RPC error.
                        Err(ServiceError::McpError(err)) => Err(ToolError::Failed(err.message.into_owned())),
                        Err(err) => Err(broken(err)),
                    };
                }
                Some(update) = updates.next() => on_progress(Progress {
                    done: update.progress,
                    total: update.total,
                }),
            }
        }
    }
}

impl Drop for Session {
    /// Ends the session and, on a task of its own, gives up its place among
    /// its server's `max_sessions` once the SDK's task for it has ended (an
    /// HTTP session deleted, a stdio server's process exited or killed), or
    /// [`END_BOUND`] passed: a replacement does not run beside the process
    /// it replaces, unless that one outlasts the bound. Dropped outside a
    /// runtime, it gives up its place at once, and the SDK's guard ends
    /// the session.
    fn drop(&mut self) {
        let (Some(service), Some((place, ending))) = (self.service.take(), self.place.take())
        else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            ending.spawn_on(
                async move {
                    let _ = tokio::time::timeout(END_BOUND, service.cancel()).await;
                    drop(place);
                },
                &runtime,
            );
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("builtin", &self.builtin.is_some())
            .finish_non_exhaustive()
    }
}

/// The built-in server, on the other end of a pipe, until the client
/// closes it.
async fn run_builtin(io: tokio::io::DuplexStream) {
    match ToolServer.serve(io).await {
        Ok(running) => {
            if let Err(err) = running.waiting().await {
                tracing::error!(target: "tool_server", %err, "tool server stopped");
            }
        }
        Err(err) => tracing::error!(target: "tool_server", %err, "tool server did not start"),
    }
}

/// The text a tool of `server` answered with, or its error. An answer that
/// is no tool result at all is the server's failure, not the tool's: the
/// client is not shown what it was (the log is).
fn text_of(server: &str, result: ServerResult) -> Result<String, ToolError> {
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
        other => Err(ToolError::server(
            server,
            format_args!("answered a tool call with something else: {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerResult;

    use super::{text_of, ToolError};

    #[test]
    fn an_answer_that_is_no_tool_result_is_the_servers_failure_and_not_shown() {
        let err = text_of("search", ServerResult::empty(())).unwrap_err();
        assert!(matches!(err, ToolError::Server { .. }), "{err:?}");
        assert!(
            err.to_string().contains("EmptyResult"),
            "the log says what it was: {err}"
        );
        assert_eq!(
            err.for_client(),
            "MCP server `search` failed the tool call; the gateway's log says why"
        );
    }
}
