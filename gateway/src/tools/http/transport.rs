//! [`TimeboxHttp`]: the SDK's [`StreamableHttpClient`] over timebox's
//! [`Client`], one method per kind of MCP request.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures_util::stream::BoxStream;
use http::header::ACCEPT;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest, ServerJsonRpcMessage,
};
use rmcp::transport::common::http_header::{HEADER_LAST_EVENT_ID, HEADER_SESSION_ID};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use timebox::client::{Client, ClientError, RequestBuilder};
use timebox::config::Config;

use super::answer::{answers, session_of, BodyKind};
use super::body::{bounded_body, events};
use super::failed::Failed;

/// What both kinds of answer accept.
const ACCEPTS: &str = "text/event-stream, application/json";

/// The MCP SDK's streamable HTTP client over timebox's [`Client`]. Clones
/// share the client, and so its budgets and breakers.
#[derive(Debug, Clone)]
pub(crate) struct TimeboxHttp {
    /// Built at its first use, or by [`build`](Self::build): building one
    /// reads the system's CA certificates, and panics without them (see
    /// `timebox::client::ClientBuilder::build`), which a gateway with no
    /// server over HTTP must not need.
    client: Arc<LazyLock<Client, Box<dyn FnOnce() -> Client + Send>>>,
    /// The bound of the `initialize` request and its answer, head and body:
    /// the server's `connect_timeout_ms`, once
    /// [`opening_within`](Self::opening_within) set it.
    open_within: Duration,
}

/// The error the SDK's transport takes from its HTTP client.
pub(super) type Error = StreamableHttpError<ClientError>;

impl TimeboxHttp {
    /// A client configured by `config`, not yet built.
    pub(crate) fn new(config: &Config) -> Self {
        let config = config.clone();
        Self {
            client: Arc::new(LazyLock::new(Box::new(move || Client::new(&config)))),
            open_within: AS_LONG_AS_THE_WORK,
        }
    }

    /// Builds the client now, on the caller's task, rather than at its
    /// first request on the SDK's.
    pub(crate) fn build(&self) {
        LazyLock::force(&self.client);
    }

    /// The same client, bounding a session's `initialize` request, its
    /// answer's head and body (an event stream's too), by
    /// `connect_timeout`, the server's `connect_timeout_ms`. The handshake
    /// is dropped at that bound, and the SDK's worker task, which sent the
    /// request, does not drop it with the handshake: without a bound of its
    /// own, a server that never answered would hold the task and its
    /// connection for good.
    pub(crate) fn opening_within(mut self, connect_timeout: Duration) -> Self {
        self.open_within = connect_timeout;
        self
    }

    /// A request to `uri` with the headers every MCP request carries.
    fn request(
        &self,
        method: Method,
        uri: &str,
        session_id: Option<&str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> RequestBuilder {
        let mut request = self.client.request(method, uri);
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id);
        }
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        request
    }
}

/// The SDK's transport sends with the methods that take its limits
/// (`post_message_with_response_limits`,
/// `get_stream_with_max_sse_event_size`); the plain ones apply the SDK's
/// default limits.
impl StreamableHttpClient for TimeboxHttp {
    type Error = ClientError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let had_session = session_id.is_some();
        let request = self
            .request(
                Method::POST,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )
            .header(ACCEPT, ACCEPTS)
            .json(&message);
        let request = match &message {
            JsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::InitializeRequest(_),
                ..
            }) => request.timeout(self.open_within),
            JsonRpcMessage::Request(_) => {
                request.attempt_timeout(AS_LONG_AS_THE_WORK).long_running()
            }
            _ => request,
        };
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        // Notifications and replies leave nothing outstanding: whatever
        // success answers them, nothing in it is needed.
        let awaits_nothing = !matches!(message, JsonRpcMessage::Request(_));
        // The answer to a request may open the session (`initialize`'s
        // does): a bad id there is refused. An error opens none, and a
        // message that awaits nothing needs nothing: a bad id beside them
        // is left out, and does not hide what the server said.
        let new_session = match session_of(&response) {
            Err(bad) if status.is_success() && !awaits_nothing => return Err(bad),
            session => session.unwrap_or(None),
        };
        let kind = BodyKind::of(&response);
        if !status.is_success() {
            return match Failed::read(response, kind, &limits, Some(&message)).await {
                Failed::JsonRpc(error) => Ok(StreamableHttpPostResponse::Json(*error, new_session)),
                Failed::Http(error) => Err(error),
            };
        }
        match kind {
            BodyKind::EventStream => Ok(StreamableHttpPostResponse::Sse(
                events(response, limits.max_sse_event_size),
                new_session,
            )),
            BodyKind::Json => {
                let body = bounded_body(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    // A request's one JSON answer is its response or its
                    // error. Anything else (an error with no id, another
                    // request's answer) rmcp would not route to it, and the
                    // call would wait until the request's own bound. A
                    // message that awaits nothing needs nothing from it.
                    Ok(answer) if !answers(&answer, &message) => {
                        if awaits_nothing {
                            Ok(StreamableHttpPostResponse::Accepted)
                        } else {
                            Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                                format!("HTTP {status}: the JSON body does not answer the request"),
                            )))
                        }
                    }
                    Ok(answer) => Ok(StreamableHttpPostResponse::Json(answer, new_session)),
                    Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                    Err(err) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                        format!("the answer is not JSON-RPC: {err}"),
                    ))),
                }
            }
            BodyKind::Other(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
            BodyKind::Other(content_type) => {
                Err(StreamableHttpError::UnexpectedContentType(content_type))
            }
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let response = self
            .request(
                Method::DELETE,
                &uri,
                Some(&session_id),
                auth_header,
                custom_headers,
            )
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        // A server that keeps no sessions to delete says so with 405.
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(drop)
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            limit,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let mut request = self
            .request(
                Method::GET,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )
            .header(ACCEPT, ACCEPTS);
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let kind = BodyKind::of(&response);
        if !response.status().is_success() {
            let limits = StreamableHttpResponseLimits::default();
            return Err(Failed::read(response, kind, &limits, None)
                .await
                .into_error());
        }
        match kind {
            BodyKind::EventStream | BodyKind::Json => Ok(events(response, max_sse_event_size)),
            BodyKind::Other(content_type) => {
                Err(StreamableHttpError::UnexpectedContentType(content_type))
            }
        }
    }
}

/// The bound of the head of a request's answer: none short of the
/// client's longest (30 years). See the module's docs.
const AS_LONG_AS_THE_WORK: Duration = Duration::MAX;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use futures_util::StreamExt;
    use rmcp::model::{
        ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, NumberOrString, ServerJsonRpcMessage,
    };
    use rmcp::transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    };
    use timebox::config::Config;

    use super::TimeboxHttp;

    /// A server on 127.0.0.1 that gives every request `answer`; its URL.
    async fn answering(answer: axum::response::Response) -> Arc<str> {
        let answer = Arc::new(std::sync::Mutex::new(Some(answer)));
        let router = axum::Router::new().fallback(move || {
            let answer = Arc::clone(&answer);
            async move {
                let taken = answer.lock().map(|mut answer| answer.take());
                taken
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| StatusCode::GONE.into_response())
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}/mcp").into()
    }

    fn initialize() -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(rmcp::model::InitializeRequest::new(
                rmcp::model::InitializeRequestParams::new(
                    rmcp::model::ClientCapabilities::default(),
                    rmcp::model::Implementation::new("test", "1"),
                ),
            )),
            NumberOrString::Number(1),
        )
    }

    fn ping() -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(rmcp::model::PingRequest::default()),
            NumberOrString::Number(1),
        )
    }

    async fn post(
        answer: axum::response::Response,
        session: Option<&str>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<timebox::client::ClientError>> {
        post_message(ping(), answer, session, limits).await
    }

    /// `message` POSTed to a server that answers `answer`.
    async fn post_message(
        message: ClientJsonRpcMessage,
        answer: axum::response::Response,
        session: Option<&str>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<timebox::client::ClientError>> {
        let uri = answering(answer).await;
        TimeboxHttp::new(&Config::default())
            .post_message_with_response_limits(
                uri,
                message,
                session.map(Arc::from),
                None,
                HashMap::new(),
                limits,
            )
            .await
    }

    /// The JSON-RPC message a POST was answered with, if it was.
    fn answer<E>(posted: &Result<StreamableHttpPostResponse, E>) -> Option<&ServerJsonRpcMessage> {
        match posted {
            Ok(StreamableHttpPostResponse::Json(message, _)) => Some(message),
            _ => None,
        }
    }

    fn json(status: StatusCode, body: &'static str) -> axum::response::Response {
        (status, [("content-type", "application/json")], body).into_response()
    }

    /// A server that opens connections and reads, but never answers: the
    /// `initialize` request ends at the bound the session opens within,
    /// since nothing else would end it; its connection closes with it.
    #[tokio::test]
    async fn an_initialize_the_server_never_answers_ends_at_the_connect_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let (closed, closing) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("the client connects");
            let mut buf = [0_u8; 1024];
            // Read whatever comes, answer nothing, until the client closes.
            while tokio::io::AsyncReadExt::read(&mut socket, &mut buf)
                .await
                .is_ok_and(|n| n > 0)
            {}
            let _ = closed.send(());
        });
        let bound = std::time::Duration::from_millis(200);
        let http = TimeboxHttp::new(&Config::default()).opening_within(bound);
        let start = std::time::Instant::now();
        let posted = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            http.post_message_with_response_limits(
                format!("http://{addr}/mcp").into(),
                initialize(),
                None,
                None,
                HashMap::new(),
                StreamableHttpResponseLimits::default(),
            ),
        )
        .await
        .expect("the initialize request ends at its bound");
        assert!(
            matches!(
                posted,
                Err(StreamableHttpError::Client(
                    timebox::client::ClientError::DeadlineExceeded(_)
                ))
            ),
            "{posted:?}"
        );
        let took = start.elapsed();
        assert!(
            took >= bound && took < bound + std::time::Duration::from_secs(2),
            "{took:?}"
        );
        tokio::time::timeout(std::time::Duration::from_secs(2), closing)
            .await
            .expect("the connection closes with the request")
            .expect("the server saw it close");
    }

    /// A server that answers `initialize` with an event stream's head and
    /// then nothing: the stream ends at the bound too.
    #[tokio::test]
    async fn an_initialize_answered_with_a_stream_that_stalls_ends_at_the_connect_timeout() {
        let stalls = axum::response::sse::Sse::new(futures_util::stream::pending::<
            Result<axum::response::sse::Event, std::convert::Infallible>,
        >());
        let uri = answering(stalls.into_response()).await;
        let bound = std::time::Duration::from_millis(200);
        let http = TimeboxHttp::new(&Config::default()).opening_within(bound);
        let start = std::time::Instant::now();
        let posted = http
            .post_message_with_response_limits(
                uri,
                initialize(),
                None,
                None,
                HashMap::new(),
                StreamableHttpResponseLimits::default(),
            )
            .await;
        let Ok(StreamableHttpPostResponse::Sse(mut events, _)) = posted else {
            panic!("an event stream's head: {posted:?}");
        };
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
            .await
            .expect("the stream ends at its bound");
        assert!(matches!(first, Some(Err(_))), "{first:?}");
        let took = start.elapsed();
        assert!(
            took >= bound && took < bound + std::time::Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_json_answer_longer_than_its_limit_is_refused_naming_the_limit() {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_json_response_size = 16;
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let refused = post(json(StatusCode::OK, body), None, limits).await;
        assert!(
            matches!(
                refused,
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size: 16 })
            ),
            "{refused:?}"
        );
        let answered = post(json(StatusCode::OK, body), None, Default::default()).await;
        assert!(
            matches!(answer(&answered), Some(JsonRpcMessage::Response(_))),
            "{answered:?}"
        );
    }

    #[tokio::test]
    async fn a_json_rpc_error_behind_an_error_status_is_the_answer() {
        let body =
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no such session"}}"#;
        let answered = post(
            json(StatusCode::BAD_REQUEST, body),
            None,
            Default::default(),
        )
        .await;
        assert!(
            matches!(answer(&answered), Some(JsonRpcMessage::Error(_))),
            "{answered:?}"
        );
    }

    /// A success whose JSON body answers no request (an error with no id,
    /// another request's answer, a notification) fails the call at once:
    /// rmcp would route it nowhere, and the call would wait until its
    /// request's own bound.
    #[tokio::test]
    async fn a_json_success_that_does_not_answer_the_request_fails_it() {
        for body in [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
        ] {
            let failed = post(json(StatusCode::OK, body), None, Default::default()).await;
            match failed {
                Err(StreamableHttpError::UnexpectedServerResponse(said)) => assert_eq!(
                    said, "HTTP 200 OK: the JSON body does not answer the request",
                    "{body}"
                ),
                other => panic!("{body}: {other:?}"),
            }
        }
        // Its own id, also as a string, as the SDK takes it.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"no"}}"#,
        ] {
            let answered = post(json(StatusCode::OK, body), None, Default::default()).await;
            assert!(answer(&answered).is_some(), "{body}: {answered:?}");
        }
    }

    /// A session id that is not visible ASCII (MCP's rule) is refused,
    /// said escaped, rather than taken for none (the session would go on
    /// without it); so is a content type that is not text. A good id is
    /// passed on.
    #[tokio::test]
    async fn a_bad_session_id_or_content_type_is_refused_naming_it() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let with_session = |id: &'static [u8]| {
            let mut answer = json(StatusCode::OK, body);
            let id = axum::http::HeaderValue::from_bytes(id).expect("a header value");
            answer.headers_mut().insert("mcp-session-id", id);
            answer
        };
        for (id, said) in [(&b"s\xff1"[..], r#""s\xff1""#), (&b"s 1"[..], r#""s 1""#)] {
            match post(with_session(id), None, Default::default()).await {
                Err(StreamableHttpError::UnexpectedServerResponse(message)) => assert_eq!(
                    message,
                    format!("the `Mcp-Session-Id` header is not visible ASCII: {said}")
                ),
                other => panic!("{other:?}"),
            }
        }
        let answered = post(with_session(b"s-1"), None, Default::default()).await;
        assert!(
            matches!(&answered, Ok(StreamableHttpPostResponse::Json(_, Some(id))) if id == "s-1"),
            "{answered:?}"
        );
        let mut answer = json(StatusCode::OK, body);
        let not_text = axum::http::HeaderValue::from_bytes(b"s\xff1").expect("obs-text");
        answer.headers_mut().insert("content-type", not_text);
        match post(answer, None, Default::default()).await {
            Err(StreamableHttpError::UnexpectedContentType(said)) => {
                assert_eq!(said.as_deref(), Some(r#""s\xff1""#));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A notification awaits no answer: a response or an error naming a
    /// request that comes back to it is passed to no request (rmcp would
    /// take it for that request's answer); after a success it is ignored,
    /// after an error status the status is the failure.
    #[tokio::test]
    async fn an_answer_naming_a_request_that_comes_to_a_notification_reaches_no_request() {
        let initialized = || {
            serde_json::from_str::<ClientJsonRpcMessage>(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .expect("a notification")
        };
        for body in [
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"not yours"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
        ] {
            let ok = json(StatusCode::OK, body);
            let posted = post_message(initialized(), ok, None, Default::default()).await;
            assert!(
                matches!(posted, Ok(StreamableHttpPostResponse::Accepted)),
                "{body}: {posted:?}"
            );
        }
        let body = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"not yours"}}"#;
        let refused = json(StatusCode::BAD_REQUEST, body);
        let failed = post_message(initialized(), refused, None, Default::default()).await;
        match failed {
            Err(StreamableHttpError::UnexpectedServerResponse(said)) => {
                assert!(said.starts_with("HTTP 400 Bad Request: "), "{said}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_json_rpc_error_with_no_id_is_the_failure_of_its_status() {
        let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"boom"}}"#;
        let failed = post(
            json(StatusCode::INTERNAL_SERVER_ERROR, body),
            None,
            Default::default(),
        )
        .await;
        assert!(
            matches!(&failed, Err(StreamableHttpError::HttpStatus(status)) if status.status == 500),
            "{failed:?}"
        );
    }

    /// An error behind an error status that names another request is not
    /// this request's answer: it fails this call at once, as the status,
    /// and fails no other call.
    #[tokio::test]
    async fn a_json_rpc_error_naming_another_request_is_the_failure_of_its_status() {
        let body = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"not yours"}}"#;
        let failed = post(
            json(StatusCode::BAD_REQUEST, body),
            None,
            Default::default(),
        )
        .await;
        match failed {
            Err(StreamableHttpError::UnexpectedServerResponse(said)) => {
                assert!(said.starts_with("HTTP 400 Bad Request: "), "{said}");
                assert!(said.contains("not yours"), "{said}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// What the failure says goes to log lines: an error body is quoted
    /// escaped, and in part when long.
    #[tokio::test]
    async fn an_error_body_is_quoted_escaped_up_to_a_kilobyte() {
        for (body, quoted) in [
            ("x".repeat(4096), "x".repeat(1024)),
            ("a\nERROR forged".to_owned(), "a\\nERROR forged".to_owned()),
        ] {
            let refused = (StatusCode::BAD_REQUEST, body).into_response();
            let failed = post(refused, None, Default::default()).await;
            match failed {
                Err(StreamableHttpError::UnexpectedServerResponse(said)) => {
                    let shown = said.strip_prefix("HTTP 400 Bad Request: ");
                    assert_eq!(shown, Some(&*quoted), "{said}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn an_error_whose_json_body_is_past_its_limit_says_so() {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_json_response_size = 16;
        let body = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}"#;
        let failed = post(json(StatusCode::BAD_REQUEST, body), None, limits).await;
        match failed {
            Err(StreamableHttpError::UnexpectedServerResponse(said)) => {
                assert!(said.starts_with("HTTP 400 Bad Request: "), "{said}");
                assert!(said.contains("not read") && said.contains("16"), "{said}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_failing_server_is_its_status_with_its_retry_after() {
        let failing = (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "7")],
            "busy",
        );
        let failed = post(failing.into_response(), None, Default::default()).await;
        match failed {
            Err(StreamableHttpError::HttpStatus(status)) => {
                assert_eq!(
                    (status.status, status.retry_after.as_deref()),
                    (503, Some("7"))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_session_the_server_does_not_know_has_expired() {
        let expired = post(
            StatusCode::NOT_FOUND.into_response(),
            Some("s-1"),
            Default::default(),
        )
        .await;
        assert!(
            matches!(expired, Err(StreamableHttpError::SessionExpired)),
            "{expired:?}"
        );
        let other = post(
            StatusCode::NOT_FOUND.into_response(),
            None,
            Default::default(),
        )
        .await;
        assert!(
            matches!(other, Err(StreamableHttpError::UnexpectedServerResponse(ref said)) if said.contains("404")),
            "{other:?}"
        );
    }

    #[tokio::test]
    async fn an_event_longer_than_its_limit_ends_the_stream_with_an_error() {
        let events = "data: {}\n\ndata: 0123456789012345678901234567890123456789\n\n";
        let stream = (
            StatusCode::OK,
            [("content-type", "text/event-stream")],
            events,
        );
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = 32;
        let Ok(StreamableHttpPostResponse::Sse(mut events, _)) =
            post(stream.into_response(), None, limits).await
        else {
            panic!("an event stream");
        };
        assert!(
            matches!(events.next().await, Some(Ok(_))),
            "the short event comes"
        );
        let cut = events.next().await;
        assert!(
            matches!(&cut, Some(Err(err)) if err.to_string().contains("longer than 32 bytes")),
            "{cut:?}"
        );
        assert!(events.next().await.is_none(), "and the stream ends");
    }
}
