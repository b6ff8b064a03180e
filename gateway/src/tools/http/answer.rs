//! What an MCP server's response is: the kind of its body, whether a
//! JSON body answers the message sent, and the session id it gives.

use std::borrow::Cow;

use http::header::CONTENT_TYPE;
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, NumberOrString, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use timebox::client::Response;

use super::transport::Error;

/// What a response's `Content-Type` says its body is.
pub(super) enum BodyKind {
    EventStream,
    Json,
    Other(Option<String>),
}

impl BodyKind {
    pub(super) fn of(response: &Response) -> Self {
        let Some(value) = response.headers().get(CONTENT_TYPE) else {
            return Self::Other(None);
        };
        // Not text: what came, escaped, for the error to show.
        let Ok(value) = value.to_str().map(str::to_owned) else {
            return Self::Other(Some(format!("{value:?}")));
        };
        // The media type is what comes before any parameter, in any case.
        let essence = value.split(';').next().unwrap_or_default().trim();
        if essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE) {
            Self::EventStream
        } else if essence.eq_ignore_ascii_case(JSON_MIME_TYPE) {
            Self::Json
        } else {
            Self::Other(Some(value))
        }
    }
}

/// Whether `answer`, the JSON body of a success, answers `message`: for a
/// request, its response or an error that names its id; for anything else
/// (which awaits nothing), any message but a response or an error that
/// names a request, which rmcp would take for the answer to that request
/// of ours.
pub(super) fn answers(answer: &ServerJsonRpcMessage, message: &ClientJsonRpcMessage) -> bool {
    let JsonRpcMessage::Request(request) = message else {
        return match answer {
            JsonRpcMessage::Response(_) => false,
            JsonRpcMessage::Error(error) => error.id.is_none(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => true,
        };
    };
    match answer {
        JsonRpcMessage::Response(response) => same_id(&request.id, &response.id),
        JsonRpcMessage::Error(error) => {
            error.id.as_ref().is_some_and(|id| same_id(&request.id, id))
        }
        JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => false,
    }
}

/// Whether an answer's id names the request `ours`: the same id, or our
/// number written as a string (`"1"` for `1`), which the SDK routes to the
/// request too.
fn same_id(ours: &RequestId, theirs: &RequestId) -> bool {
    ours == theirs
        || matches!(
            (ours, theirs),
            (NumberOrString::Number(number), NumberOrString::String(text))
                if text.parse::<i64>().ok() == Some(*number)
        )
}

/// The text of `response`'s header `name`, for a hint (`Retry-After`): a
/// value that is not visible ASCII is as none.
pub(super) fn header_text(response: &Response, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    value.to_str().ok().map(str::to_owned)
}

/// The session id `response` gives, if any.
///
/// # Errors
///
/// One that is not visible ASCII (0x21 to 0x7E), as MCP requires, is
/// refused, naming the header, rather than taken for none: the session
/// would go on without it.
pub(super) fn session_of(response: &Response) -> Result<Option<String>, Error> {
    let Some(value) = response.headers().get(HEADER_SESSION_ID) else {
        return Ok(None);
    };
    let visible = |byte: &u8| (0x21..=0x7e).contains(byte);
    match value.to_str() {
        Ok(id) if id.bytes().all(|byte| visible(&byte)) => Ok(Some(id.to_owned())),
        _ => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("the `{HEADER_SESSION_ID}` header is not visible ASCII: {value:?}"),
        ))),
    }
}
