//! [`ToolServer`]: an MCP server with one slow tool that reports progress.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// The name of the one tool: works for `seconds` seconds, reporting progress
/// each second.
pub(crate) const SLOW_TASK: &str = "slow_task";

/// The longest `slow_task` accepted, so a typo cannot start a task that
/// outlives every timer.
pub(crate) const MAX_SECONDS: u64 = 3600;

/// The MCP tool server. Logs under the `tool_server` target, so its lines
/// stand apart from the gateway's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolServer;

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![slow_task_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != SLOW_TASK {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; the only tool is `{SLOW_TASK}`",
                    request.name
                ),
                None,
            ));
        }
        let arguments = request.arguments.as_ref();
        let seconds = seconds_argument(arguments)?;
        let progress = progress_argument(arguments)?;
        slow_task(seconds, progress, context).await.map(Into::into)
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        tracing::info!(
            target: "tool_server",
            mcp_request_id = notification.request_id.as_ref().map(tracing::field::display),
            reason = notification.reason.as_deref().unwrap_or("none given"),
            "notifications/cancelled received"
        );
    }
}

fn slow_task_tool() -> Tool {
    let schema = JsonObject::from_iter([
        ("type".to_owned(), json!("object")),
        (
            "properties".to_owned(),
            json!({
            "seconds": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SECONDS,
                "description": "how long the task works",
            },
            "progress": {
                "type": "boolean",
                "default": true,
                "description": "whether to report progress every second",
            },
            }),
        ),
        ("required".to_owned(), json!(["seconds"])),
    ]);
    Tool::new(
        SLOW_TASK,
        "Works for the given number of seconds, reporting progress every second.",
        schema,
    )
}

/// `seconds` from the call's arguments, or an error naming it.
fn seconds_argument(arguments: Option<&JsonObject>) -> Result<u64, ErrorData> {
    let value = arguments
        .and_then(|arguments| arguments.get("seconds"))
        .ok_or_else(|| ErrorData::invalid_params("argument `seconds` is missing", None))?;
    match value.as_u64() {
        Some(seconds @ 1..=MAX_SECONDS) => Ok(seconds),
        _ => Err(ErrorData::invalid_params(
            format!("argument `seconds` must be an integer in 1..={MAX_SECONDS}, not {value}"),
            None,
        )),
    }
}

/// `progress` from the call's arguments (default `true`), or an error naming
/// it.
fn progress_argument(arguments: Option<&JsonObject>) -> Result<bool, ErrorData> {
    match arguments.and_then(|arguments| arguments.get("progress")) {
        None => Ok(true),
        Some(value) => value.as_bool().ok_or_else(|| {
            ErrorData::invalid_params(
                format!("argument `progress` must be true or false, not {value}"),
                None,
            )
        }),
    }
}

/// Works one second at a time, reporting progress after each when asked
/// to, until done or cancelled by the client.
async fn slow_task(
    seconds: u64,
    progress: bool,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    tracing::info!(target: "tool_server", mcp_request_id = %context.id, seconds, "slow_task started");
    let progress_token = context.meta.get_progress_token().filter(|_| progress);
    for done in 1..=seconds {
        tokio::select! {
            () = context.ct.cancelled() => {
                tracing::info!(
                    target: "tool_server",
                    mcp_request_id = %context.id,
                    done_secs = done - 1,
                    of_secs = seconds,
                    "slow_task stopped: cancelled"
                );
                return Err(ErrorData::internal_error("slow_task cancelled", None));
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        if let Some(token) = &progress_token {
            #[allow(clippy::cast_precision_loss, reason = "seconds are at most 3600")]
            let progress = ProgressNotificationParam::new(token.clone(), done as f64)
                .with_total(seconds as f64)
                .with_message(format!("{done} of {seconds} s"));
            // A client that stopped listening is no reason to stop working:
            // only a cancellation is.
            let _ = context.peer.notify_progress(progress).await;
        }
    }
    tracing::info!(target: "tool_server", mcp_request_id = %context.id, seconds, "slow_task finished");
    Ok(CallToolResult::success(vec![ContentBlock::text(format!(
        "worked for {seconds} s"
    ))]))
}
