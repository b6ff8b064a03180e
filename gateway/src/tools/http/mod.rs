//! [`TimeboxHttp`]: the MCP SDK's streamable HTTP client transport, sending
//! through timebox's outbound [`Client`](timebox::client::Client).
//!
//! Every POST, GET and DELETE of an MCP session over HTTP is a call of the
//! gateway's one `Client`, so the rules of the gateway's own outbound calls
//! hold for its MCP servers too, and `/metrics` shows them: the attempts
//! and their outcomes per host, the retries skipped and why, the per-host
//! retry budget and circuit breaker. A failing MCP server opens its
//! breaker, and the gateway stops sending it requests until it recovers.
//!
//! What the `Client` decides, per request:
//! - POSTs carry JSON-RPC messages and are not idempotent: they are sent
//!   once, never retried (the skipped retry is counted, reason
//!   `not_idempotent`). The GET of the server's event stream and the DELETE
//!   of a session are retried within the budget.
//! - `http.client.timeout_secs` bounds each attempt of a notification, a
//!   reply, the GET and the DELETE until the response's head arrives. A
//!   request's answer takes as long as its work: an event stream that
//!   lasts as long as the tool runs, or, from a server in JSON response
//!   mode, one JSON body whose head comes only once the tool is done. So
//!   neither its head nor its body has a bound of its own, and the call is
//!   `long_running`: its time is not held against the server by its
//!   breaker (a JSON-mode server whose tools run a minute is not a slow
//!   one), while its failures count as any other's. A server that takes
//!   tool calls and never answers them is then not caught by its breaker,
//!   in either mode (an event stream's head comes at once): each request's
//!   own bound ends its call. The request's
//!   own bound (the stream's watchdog, or the deadline of an answer that
//!   is not streamed) ends the call on the gateway's side, and the
//!   request's cleanup then tells the server to stop
//!   (`notifications/cancelled`); the SDK drops the POST when its request
//!   is cancelled, and every POST of a session when the session closes.
//!   The one request with a bound is `initialize`, which with its answer,
//!   head and body, ends within the server's `connect_timeout_ms` (as a
//!   call's `.timeout()` does, so its deadline header goes out): the SDK's
//!   worker task sends it and keeps it when the handshake is given up (at
//!   that bound, or when the request that needed the session ends), so it
//!   needs a bound of its own.
//! - The POSTs but `initialize` carry no deadline header. The SDK sends
//!   them from a worker task of the session's, where no request's deadline
//!   is current, and a deadline the `Client` knew of would also bound the
//!   answer's event stream: cut at the deadline, the stream closes the
//!   whole session (the SDK ends it on a broken stream), before the
//!   cancellation notice could go out on it. In MCP a lost connection does not cancel a request, so
//!   the notice is what stops the tool.
//!
//! Response bodies are bounded as the SDK's own client bounds them
//! ([`StreamableHttpResponseLimits`](rmcp::transport::streamable_http_client::StreamableHttpResponseLimits)): a JSON body past its limit, or an
//! event of the stream past its limit, is an error.
//!
//! The gateway does not authenticate to its MCP servers, and it opens
//! sessions with the SDK's `initialize` handshake, so the `server/discover`
//! probe of newer protocol versions is never sent.

mod answer;
mod body;
mod failed;
mod transport;

pub(crate) use transport::TimeboxHttp;
