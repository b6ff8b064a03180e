//! The OpenAI chat-completions wire format: what clients send and what they
//! are answered, in the subset the gateway speaks.

use std::borrow::Cow;

use axum::extract::rejection::JsonRejection;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// `POST /v1/chat/completions`. Fields the gateway does not know are
/// accepted and ignored, as OpenAI-compatible servers do, so real clients
/// work unchanged. The common sampling fields it knows are checked as
/// OpenAI's API checks them (a wrong type or range is a `400` naming the
/// field), and not read otherwise: the scripted models' answers are fixed,
/// so `temperature`, `top_p` and the token limits change nothing. `null`
/// is the same as no value throughout.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<Message>,
    /// OpenAI's API takes `null` as it takes no value: not streamed.
    #[serde(default, deserialize_with = "false_if_null")]
    pub(crate) stream: bool,
    /// Only with `stream`, as OpenAI's API has it.
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
    /// From 0 to 2.
    #[serde(default)]
    temperature: Option<f64>,
    /// From 0 to 1.
    #[serde(default)]
    top_p: Option<f64>,
    /// How many choices to answer: 1, the one the gateway makes.
    #[serde(default)]
    n: Option<u32>,
    /// At least 1.
    #[serde(default)]
    max_tokens: Option<u32>,
    /// At least 1.
    #[serde(default)]
    max_completion_tokens: Option<u32>,
}

/// `stream_options`: what a streamed answer adds.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    /// One more chunk before `[DONE]`, with no choices and the `usage` of
    /// the whole completion; every chunk before it says `"usage": null`.
    #[serde(default, deserialize_with = "false_if_null")]
    pub(crate) include_usage: bool,
}

fn false_if_null<'de, D: serde::Deserializer<'de>>(value: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(value)?.unwrap_or(false))
}

/// The roles OpenAI's API accepts for a message.
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

impl ChatRequest {
    /// Refuses a request OpenAI would refuse: `stream_options` without
    /// `stream`, no conversation at all, a message
    /// whose role is not one of [`ROLES`] (its error names
    /// `messages[<i>].role`), or one whose content is neither text, nor a
    /// list of content parts, nor absent (see [`Message::check_content`]);
    /// a sampling field out of its range, or an `n` other than 1.
    pub(crate) fn check(&self) -> Result<(), ApiError> {
        self.check_sampling()?;
        if self.stream_options.is_some() && !self.stream {
            return Err(ApiError::invalid(
                Some("stream_options".into()),
                "`stream_options` is only allowed when `stream` is true",
            ));
        }
        if self.messages.is_empty() {
            return Err(ApiError::invalid(
                Some("messages".into()),
                "`messages` is empty; send at least one message",
            ));
        }
        for (i, message) in self.messages.iter().enumerate() {
            if !ROLES.contains(&message.role.as_str()) {
                return Err(ApiError::invalid(
                    Some(format!("messages[{i}].role").into()),
                    format!(
                        "`messages[{i}].role` is `{}`; expected one of {}",
                        message.role,
                        ROLES.join(", ")
                    ),
                ));
            }
            message.check_content(i)?;
        }
        Ok(())
    }

    /// Refuses a sampling field out of its range, and an `n` other than 1.
    fn check_sampling(&self) -> Result<(), ApiError> {
        let out_of_range = |field: &'static str, value: &dyn std::fmt::Display, range: &str| {
            ApiError::invalid(
                Some(field.into()),
                format!("`{field}` is {value}; expected {range}"),
            )
        };
        if let Some(t) = self.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Err(out_of_range("temperature", &t, "a number from 0 to 2"));
        }
        if let Some(p) = self.top_p.filter(|p| !(0.0..=1.0).contains(p)) {
            return Err(out_of_range("top_p", &p, "a number from 0 to 1"));
        }
        for (field, limit) in [
            ("max_tokens", self.max_tokens),
            ("max_completion_tokens", self.max_completion_tokens),
        ] {
            if limit == Some(0) {
                return Err(out_of_range(field, &0, "at least 1"));
            }
        }
        match self.n {
            None | Some(1) => Ok(()),
            Some(0) => Err(out_of_range("n", &0, "at least 1")),
            Some(n) => Err(out_of_range(
                "n",
                &n,
                "1: the gateway answers with one choice",
            )),
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    /// Who speaks: one of [`ROLES`], checked by [`ChatRequest::check`].
    pub(crate) role: String,
    /// Text, or the content parts newer clients send; only text is read.
    #[serde(default)]
    pub(crate) content: Option<Value>,
}

impl Message {
    /// Refuses the content of message `i` when it is not of a shape
    /// OpenAI's API takes: anything but a string, a list of parts or `null`
    /// (its error names `messages[<i>].content`), and a part that is not an
    /// object with a string `type`, or a `text` part without a string
    /// `text` (named `messages[<i>].content[<j>]`). Parts of other types
    /// (images, audio) are accepted, and not read.
    fn check_content(&self, i: usize) -> Result<(), ApiError> {
        let parts = match &self.content {
            None | Some(Value::Null | Value::String(_)) => return Ok(()),
            Some(Value::Array(parts)) => parts,
            Some(other) => {
                return Err(ApiError::invalid(
                    Some(format!("messages[{i}].content").into()),
                    format!(
                        "`messages[{i}].content` is {}; expected a string or a list of \
                         content parts",
                        json_kind(other)
                    ),
                ))
            }
        };
        match parts.iter().position(|part| !is_content_part(part)) {
            None => Ok(()),
            Some(j) => Err(ApiError::invalid(
                Some(format!("messages[{i}].content[{j}]").into()),
                format!(
                    "`messages[{i}].content[{j}]` is not a content part: expected an object \
                     with a string `type`, and a string `text` when the type is `text`"
                ),
            )),
        }
    }

    /// The message's text: a string, or the text parts joined.
    pub(crate) fn text(&self) -> String {
        match &self.content {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(part_text)
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }
}

/// Whether `part` is a content part: an object with a string `type`, and a
/// string `text` when that type is `text`.
fn is_content_part(part: &Value) -> bool {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => part_text(part).is_some(),
        Some(_) => true,
        None => false,
    }
}

/// The text of a `text` part; `None` for a part of another type.
fn part_text(part: &Value) -> Option<&str> {
    match part.get("type").and_then(Value::as_str) {
        Some("text") => part.get("text").and_then(Value::as_str),
        _ => None,
    }
}

/// The field a body of the wrong shape is wrong at, as OpenAI names it
/// (`messages[0].role`): where axum's JSON reader (through
/// `serde_path_to_error`) stopped, and the field that is missing there, if
/// that is what serde says (`missing field `role``). `None` for the body as
/// a whole.
fn field_of(err: &(dyn std::error::Error + 'static)) -> Option<Cow<'static, str>> {
    let mut source = err.source();
    while let Some(err) = source {
        if let Some(located) = err.downcast_ref::<serde_path_to_error::Error<serde_json::Error>>() {
            let path = located.path().to_string();
            let missing = located
                .inner()
                .to_string()
                .strip_prefix("missing field `")
                .and_then(|rest| rest.split_once('`'))
                .map(|(field, _)| field.to_owned());
            return match (path.as_str(), missing) {
                (".", None) => None,
                (".", Some(field)) => Some(field.into()),
                (_, None) => Some(path.into()),
                (_, Some(field)) => Some(format!("{path}.{field}").into()),
            };
        }
        source = err.source();
    }
    None
}

/// What JSON `value` is, for an error.
const fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What every response of one completion shares.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    pub(crate) id: String,
    pub(crate) model: String,
    /// Unix seconds, as OpenAI's `created`.
    pub(crate) created: u64,
    /// The prompt's length in tokens (words: the scripted models have no
    /// tokenizer).
    pub(crate) prompt_tokens: usize,
    /// Whether the chunks of a stream carry `usage`
    /// (`stream_options.include_usage`).
    pub(crate) stream_usage: bool,
}

impl Completion {
    /// A `chat.completion.chunk` carrying `delta`, with `finish_reason`
    /// (and `"usage": null` when the stream ends with its usage).
    pub(crate) fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        let choices = json!([{ "index": 0, "delta": delta, "finish_reason": finish_reason }]);
        let usage = self.stream_usage.then_some(Value::Null);
        self.chunk_of(choices, usage)
    }

    /// The chunk a stream asked for with `stream_options.include_usage`
    /// ends with: no choices, and the usage of the whole completion, whose
    /// answer was `completion_tokens` long.
    pub(crate) fn usage_chunk(&self, completion_tokens: usize) -> Value {
        self.chunk_of(json!([]), Some(self.usage(completion_tokens)))
    }

    fn chunk_of(&self, choices: Value, usage: Option<Value>) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        chunk
    }

    /// A whole `chat.completion` with the answer `content`, `completion_tokens`
    /// long.
    pub(crate) fn message(&self, content: &str, completion_tokens: usize) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": content },
                "finish_reason": "stop",
            }],
            "usage": self.usage(completion_tokens),
        })
    }

    fn usage(&self, completion_tokens: usize) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        })
    }
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    message: String,
    #[serde(rename = "type")]
    kind: &'static str,
    param: Option<Cow<'static, str>>,
    code: Option<&'static str>,
}

impl ApiError {
    /// A `400 invalid_request_error` about `param`.
    pub(crate) fn invalid(param: Option<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param,
            code: None,
        }
    }

    /// The body could not be read as a request: the rejection's message,
    /// which names the field, and the field as `param` when the body is
    /// JSON of the wrong shape. The status is OpenAI's `400` for JSON of
    /// the wrong shape too (axum says `422`, which the `openai` clients
    /// raise as another error than the `BadRequestError` of a bad value),
    /// else the rejection's own (`400`, `413`, `415`).
    pub(crate) fn rejected(rejection: JsonRejection) -> Self {
        let (status, param) = match &rejection {
            JsonRejection::JsonDataError(err) => (StatusCode::BAD_REQUEST, field_of(err)),
            _ => (rejection.status(), None),
        };
        Self {
            status,
            message: rejection.body_text(),
            kind: "invalid_request_error",
            param,
            code: None,
        }
    }

    /// A `500`: the gateway itself failed.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }

    /// A `404 model_not_found`.
    pub(crate) fn unknown_model(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some("model".into()),
            code: Some("model_not_found"),
        }
    }

    /// A `404` for a path the gateway does not serve, in the words of
    /// OpenAI's own.
    pub(crate) fn unknown_url(method: &Method, path: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: format!("Invalid URL ({method} {path})"),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// A `405` for a path the gateway serves, asked with another method.
    pub(crate) fn method_not_allowed(method: &Method, path: &str) -> Self {
        Self {
            status: StatusCode::METHOD_NOT_ALLOWED,
            message: format!("{path} does not take {method}"),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// A `502`: the model failed.
    pub(crate) fn upstream(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_GATEWAY,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self }))).into_response()
    }
}

/// `GET /v1/models`.
pub(crate) fn model_list(ids: &[&str]) -> Value {
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "object": "model", "created": 0, "owned_by": "timebox" }))
        .collect();
    json!({ "object": "list", "data": data })
}
