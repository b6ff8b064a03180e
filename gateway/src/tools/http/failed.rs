//! [`Failed`]: what an MCP server's response with a status that is not a
//! success says, a JSON-RPC error to pass on or the failure of its status.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, StreamableHttpError, StreamableHttpResponseLimits,
};
use timebox::client::Response;

use super::answer::{answers, header_text, BodyKind};
use super::body::{bounded_body, read_up_to};
use super::transport::Error;

/// The most bytes of a server's text a failure quotes: enough to say what
/// went wrong, in a log line of sensible length (an error body read may be
/// up to `max_error_response_size`, 64 KiB by default; a JSON-RPC error's
/// message, up to `max_json_response_size`).
const QUOTED_AT_MOST: usize = 1024;

/// `text`, which a server wrote, as a failure quotes it: its first
/// [`QUOTED_AT_MOST`] bytes, escaped as `{:?}` escapes a string's
/// characters. The failure goes to log lines (the gateway's, and rmcp's
/// own), where a server's newline must not start a line of its own.
fn quoted(text: &[u8]) -> String {
    let head = &text[..text.len().min(QUOTED_AT_MOST)];
    String::from_utf8_lossy(head).escape_debug().to_string()
}

/// What a response whose status is not a success says.
pub(super) enum Failed {
    /// A JSON-RPC error the server put in the body: the answer to pass on.
    JsonRpc(Box<ServerJsonRpcMessage>),
    /// The status, with its `Retry-After` when the server is busy or
    /// failing, else with the start of the body.
    Http(Error),
}

impl Failed {
    /// Reads what `response` says; `sent` is the message it answers, for
    /// a POST.
    pub(super) async fn read(
        response: Response,
        kind: BodyKind,
        limits: &StreamableHttpResponseLimits,
        sent: Option<&ClientJsonRpcMessage>,
    ) -> Self {
        let status = response.status();
        let retry_after = header_text(&response, RETRY_AFTER.as_str());
        // A JSON body that could not be read whole (past its limit, or
        // broken) is said as such in the failure, not taken as empty.
        let (body, unread) = match kind {
            BodyKind::Json => match bounded_body(response, limits.max_json_response_size).await {
                Ok(body) => (body, None),
                Err(err) => (Bytes::new(), Some(err)),
            },
            // A diagnostic: what came, cut at the size, is enough.
            _ => (
                read_up_to(response, limits.max_error_response_size).await.0,
                None,
            ),
        };
        // An error naming the request it answers. One with no id (what the
        // MCP Python SDK sends when it fails to handle a POST), or with
        // another request's id, answers no request of ours for rmcp, which
        // drops it or fails another call with it: this call would wait
        // until its request's own bound. Such a failure is the status's,
        // below.
        if let Ok(message @ JsonRpcMessage::Error(_)) =
            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
        {
            let named = matches!(&message, JsonRpcMessage::Error(error) if error.id.is_some());
            if named && sent.is_none_or(|sent| answers(&message, sent)) {
                return Self::JsonRpc(Box::new(message));
            }
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Self::Http(HttpStatusError::new(status.as_u16(), retry_after).into());
        }
        let said = match unread {
            Some(err) => format!("its JSON body was not read: {err}"),
            None => quoted(&body[..body.len().min(limits.max_error_response_size)]),
        };
        Self::Http(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}: {said}"),
        )))
    }

    /// The failure as an error, a JSON-RPC error included.
    pub(super) fn into_error(self) -> Error {
        match self {
            Self::Http(error) => error,
            Self::JsonRpc(message) => {
                let said = match *message {
                    JsonRpcMessage::Error(error) => quoted(error.error.message.as_bytes()),
                    _ => "a JSON-RPC answer with an error status".to_owned(),
                };
                StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                    "JSON-RPC error: {said}"
                )))
            }
        }
    }
}
