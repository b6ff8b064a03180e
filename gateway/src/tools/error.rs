//! [`ToolError`]: why a tool call gave no result, and what a client is
//! told of it.

use rmcp::ServiceError;

/// Why a tool call gave no result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    /// The call's token was cancelled; the request's remote cleanup tells
    /// the server.
    #[error("tool call cancelled")]
    Cancelled,
    /// The request ended while the call was being sent, after its cleanup
    /// had run (and found no call to cancel): the call cancelled itself at
    /// the server, and the session it went out on is not to be given back.
    #[error("tool call cancelled")]
    CancelledLate,
    /// The tool answered with an error.
    #[error("tool call failed: {0}")]
    Failed(String),
    /// The server could not be reached, or its session broke.
    #[error("MCP server `{server}` {reason}")]
    Server { server: String, reason: String },
}

impl ToolError {
    pub(crate) fn server(server: &str, reason: impl std::fmt::Display) -> Self {
        Self::Server {
            server: server.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// What a client is told: the server by its configured name, and not
    /// where it lives (a URL may hold credentials, a command line secrets)
    /// nor what it said. The whole error goes to the log.
    pub(crate) fn for_client(&self) -> String {
        match self {
            Self::Server { server, .. } => {
                format!("MCP server `{server}` failed the tool call; the gateway's log says why")
            }
            other => other.to_string(),
        }
    }
}

/// What `err` says, without the SDK's name for the transport's type.
pub(super) fn said(err: &ServiceError) -> String {
    match err {
        ServiceError::TransportSend(sent) => {
            format!("the request was not delivered: {}", sent.error)
        }
        other => other.to_string(),
    }
}
