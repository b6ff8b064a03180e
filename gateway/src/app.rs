//! The routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /ready`
//! and `GET /metrics`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use futures_util::Stream;
use metrics_exporter_prometheus::PrometheusHandle;
use serde_json::json;
use timebox::config::Config;
use timebox::registry::{Registry, RequestGuard};
use timebox::server::sse::SseStream;
use timebox::shutdown::{DrainToken, InFlight, InFlightGuard, Shutdown};
use timebox::watchdog::Watchdog;
use timebox::{get, post, routes};
use tokio::sync::mpsc;
use tracing::Instrument as _;

use crate::model::{Output, Run, Tooling};
use crate::openai::{model_list, ApiError, ChatRequest, Completion};
use crate::script::{Script, MODELS};
use crate::tools::{Leases, Progress, Tools};

/// The chat route's template, as metrics name it.
const CHAT_ROUTE: &str = "/v1/chat/completions";

/// Outputs a model may run ahead of the response being written.
const OUTPUT_BUFFER: usize = 16;

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    registry: Registry,
    tools: Tools,
    /// The MCP server of models whose name does not say.
    default_server: String,
    metrics: PrometheusHandle,
    /// The shutdown's count, which an answer's cleanup stays in until the
    /// tool servers have its notices.
    in_flight: InFlight,
    ids: CompletionIds,
}

/// Completion ids, `chatcmpl-<process>-<n>`: the counter keeps them apart
/// within the process, the random part from another gateway's, or this
/// one's before a restart, as OpenAI's ids are unique across requests.
#[derive(Debug)]
struct CompletionIds {
    process: u64,
    next: AtomicU64,
}

impl CompletionIds {
    fn new() -> Self {
        Self {
            // Twelve hex digits.
            process: timebox::entropy::Entropy::from_os().next_u64() >> 16,
            next: AtomicU64::new(1),
        }
    }

    fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("chatcmpl-{:012x}-{n}", self.process)
    }
}

impl App {
    /// The app of `config`, whose events `metrics` shows: `config` must be
    /// observed by a `MetricsObserver` recording into `metrics`' recorder.
    /// Tools run on `default_server` unless a model names another.
    /// `shutdown` waits for the answers' cleanups too.
    pub(crate) fn new(
        config: Config,
        tools: Tools,
        default_server: String,
        metrics: PrometheusHandle,
        shutdown: &Shutdown,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                registry: Registry::new(),
                tools,
                default_server,
                metrics,
                in_flight: shutdown.in_flight(),
                ids: CompletionIds::new(),
            }),
        }
    }

    /// The router: the routes under their deadlines, the readiness and
    /// metrics routes, and this state.
    ///
    /// `/metrics` is on the gateway's own port, outside the deadlines: one
    /// port to scrape, as for most single-binary services. A service that
    /// must keep it off the public port serves the same handle on an admin
    /// listener.
    ///
    /// Another path, or another method, is answered in OpenAI's error shape
    /// too (`404`, `405` with `Allow`). timebox's own answers keep the
    /// problem+json of DESIGN S5: the deadline's `503`, the deadline
    /// check's `504` and, from `serve`'s gate, the shutdown's `503`. A
    /// client reads them by their status and `Retry-After`, as the
    /// `openai` clients do.
    pub(crate) fn router(self, shutdown: &Shutdown) -> Router {
        routes![chat_completions, models]
            .into_router(&self.inner.config)
            .route("/ready", timebox::server::readiness(shutdown))
            .route("/metrics", axum::routing::get(metrics))
            .fallback(|method: Method, uri: Uri| async move {
                ApiError::unknown_url(&method, uri.path())
            })
            .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
                ApiError::method_not_allowed(&method, uri.path())
            })
            .with_state(self)
    }

    /// A new completion id, registered for the life of the request.
    fn register(&self) -> Result<(String, RequestGuard), ApiError> {
        let id = self.inner.ids.next();
        let guard = self
            .inner
            .registry
            .register(id.as_str())
            .map_err(|err| ApiError::internal(err.to_string()))?;
        Ok((id, guard))
    }

    /// Where the tools of `script` run: the server it names, else the
    /// default one.
    fn tooling(&self, script: &Script, model: &str) -> Result<Tooling, ApiError> {
        let server = match script {
            Script::Tool(tool) => tool.server.as_deref(),
            _ => None,
        }
        .unwrap_or(&self.inner.default_server);
        let tools = &self.inner.tools;
        let pool = tools.pool(server).ok_or_else(|| {
            let known: Vec<_> = tools.names().collect();
            ApiError::unknown_model(format!(
                "model `{model}` names MCP server `{server}`, which is not configured; \
                 the servers are {}",
                known.join(", ")
            ))
        })?;
        Ok(Tooling {
            leases: Leases::new(tools.clone()),
            server: server.to_owned(),
            suspend_inactivity: pool.server().suspend_inactivity,
        })
    }
}

/// `GET /metrics`: every timebox metric, in the Prometheus text format.
async fn metrics(State(app): State<App>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        app.inner.metrics.render(),
    )
}

/// `GET /v1/models`: the scripted models.
#[get("/v1/models")]
async fn models() -> Json<serde_json::Value> {
    Json(model_list(MODELS))
}

/// `POST /v1/chat/completions`, streamed (`"stream": true`) or not.
///
/// The answer that is not streamed runs under the request deadline
/// (`server.timeouts.request_timeout_ms`); a stream runs under its watchdog
/// (`stream.*`) instead. No completion is worth starting with less than
/// 100 ms left: the deadline check (dark by default, so only counted in
/// `/metrics`) compares a caller's `x-timebox-deadline-ms` with that.
#[post("/v1/chat/completions", min_budget_ms = 100)]
async fn chat_completions(
    State(app): State<App>,
    drain: DrainToken,
    request: Result<Json<ChatRequest>, JsonRejection>,
) -> Response {
    match complete(&app, drain, request).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn complete(
    app: &App,
    drain: DrainToken,
    request: Result<Json<ChatRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = request.map_err(ApiError::rejected)?;
    let script = Script::from_model(&request.model)
        .map_err(|err| ApiError::unknown_model(err.to_string()))?;
    request.check()?;
    let tooling = app.tooling(&script, &request.model)?;
    let (id, guard) = app.register()?;
    // What the completion's own tasks log (its start, its tool calls and
    // their failures) says which it is.
    let span = tracing::info_span!(
        "completion",
        request_id = id.as_str(),
        model = request.model.as_str()
    );
    span.in_scope(|| tracing::info!(stream = request.stream, "completion started"));
    let completion = Completion {
        id,
        model: request.model,
        created: unix_now(),
        // Words stand in for tokens: the scripted models have no tokenizer.
        prompt_tokens: request
            .messages
            .iter()
            .map(|message| message.text().split_whitespace().count())
            .sum(),
        stream_usage: request
            .stream_options
            .is_some_and(|options| options.include_usage),
    };
    let (out, output) = mpsc::channel(OUTPUT_BUFFER);
    let leases = tooling.leases.clone();
    let run = Run::new(script, tooling, &guard, out, span.clone());
    if request.stream {
        Ok(stream(app, completion, run, output, guard, drain, leases))
    } else {
        let counted = app.inner.in_flight.enter();
        collect(completion, run, output, guard, leases, counted)
            .instrument(span)
            .await
    }
}

/// The streamed answer: OpenAI chunks under the watchdog, heartbeats, and
/// the ending order of DESIGN R3: after a timeout or a disconnect, the
/// request's MCP sessions are evicted once their cancellation notices are
/// sent; after a normal end or a shutdown they go back to their pools.
fn stream(
    app: &App,
    completion: Completion,
    run: Run,
    output: mpsc::Receiver<Output>,
    guard: RequestGuard,
    drain: DrainToken,
    leases: Leases,
) -> Response {
    let config = &app.inner.config.stream;
    let request_id = completion.id.clone();
    let stream = SseStream::new(chunks(completion, output), Watchdog::from_config(config))
        .heartbeat(config.heartbeat())
        .drain(drain)
        .observed(&app.inner.config.observers, CHAT_ROUTE);
    let pending = run.pending().clone();
    run.watchdog(stream.watchdog_handle()).spawn();
    stream
        .guard(guard)
        .remote_cleanup(move |reason| pending.take_cancel_notices(&reason.to_string()))
        .on_evict(move || leases.evict("its request timed out or lost its client"))
        .on_step(move |step| tracing::info!(request_id, step = ?step, "stream step"))
        .into_response()
}

/// What [`chunks`] has sent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Nothing,
    /// Answer text, this many chunks of it.
    Text(usize),
    /// The chunk with `finish_reason: "stop"`, after this many of text,
    /// when the usage chunk is still to come.
    Stop(usize),
    /// The last event went out: the chunk with `finish_reason: "stop"` (or
    /// the usage chunk after it) when the model was done, else an error
    /// event.
    Last,
}

/// The model's output as SSE events: answer text as `chat.completion.chunk`
/// events (the first one names the role), tool progress as comments, which
/// clients skip. Only an answer the model finished ends with the chunk that
/// says `finish_reason: "stop"`, and then, when the client asked with
/// `stream_options.include_usage`, with the chunk that says the usage.
/// Output that stops before the model said it was done (its task died, a
/// tool server failed) ends with an error event instead: a cut-off answer
/// must not look like a short one (R5).
fn chunks(
    completion: Completion,
    output: mpsc::Receiver<Output>,
) -> impl Stream<Item = Event> + Send + 'static {
    futures_util::stream::unfold(
        (output, completion, Sent::Nothing),
        |(mut output, completion, sent)| async move {
            let (event, sent) = match sent {
                Sent::Last => return None,
                Sent::Stop(tokens) => {
                    let usage = completion.usage_chunk(tokens).to_string();
                    (Event::default().data(usage), Sent::Last)
                }
                Sent::Nothing | Sent::Text(_) => next_event(&completion, output.recv().await, sent),
            };
            Some((event, (output, completion, sent)))
        },
    )
}

/// The event for the model's next `output` (`None`: its output stopped),
/// after `sent`.
fn next_event(completion: &Completion, output: Option<Output>, sent: Sent) -> (Event, Sent) {
    let tokens = match sent {
        Sent::Text(tokens) => tokens,
        _ => 0,
    };
    match output {
        Some(Output::Token(text)) => {
            let delta = if sent == Sent::Nothing {
                json!({ "role": "assistant", "content": text })
            } else {
                json!({ "content": text })
            };
            let chunk = completion.chunk(delta, None).to_string();
            (Event::default().data(chunk), Sent::Text(tokens + 1))
        }
        Some(Output::Progress(progress)) => (progress_comment(&progress), sent),
        Some(Output::Done) => {
            let stop = completion.chunk(json!({}), Some("stop")).to_string();
            let sent = if completion.stream_usage {
                Sent::Stop(tokens)
            } else {
                Sent::Last
            };
            (Event::default().data(stop), sent)
        }
        Some(Output::Failed(message)) => (tool_failed_event(&message), Sent::Last),
        None => (model_failed_event(), Sent::Last),
    }
}

fn progress_comment(progress: &Progress) -> Event {
    let total = progress
        .total
        .map_or_else(|| "?".to_owned(), |total| total.to_string());
    Event::default().comment(format!("tool progress {}/{total}", progress.done))
}

/// Said when the model's output stopped before it was done.
const MODEL_FAILED: &str = "the model stopped before finishing its answer";

fn model_failed_event() -> Event {
    let body = json!({ "error": { "type": "model_error", "message": MODEL_FAILED } });
    Event::default().event("error").data(body.to_string())
}

/// Said when an MCP server the answer needed failed; `message` names it.
fn tool_failed_event(message: &str) -> Event {
    let body = json!({ "error": { "type": "tool_server_error", "message": message } });
    Event::default().event("error").data(body.to_string())
}

/// The whole answer at once. Runs under the request deadline: when it
/// passes (or the client hangs up), this future is dropped with the guard,
/// and the guard's async cleanup tells the tool server to stop whatever it
/// was doing for the request.
///
/// Unlike a stream's, this cleanup runs beside the `503` rather than before
/// it: the route answers as soon as the deadline passes and the handler is
/// dropped (S4), and the handler cannot make it wait. `counted` keeps the
/// request in the shutdown's in-flight count until the cleanup is done, so
/// a shutdown begun meanwhile waits for the notices to go out.
async fn collect(
    completion: Completion,
    run: Run,
    mut output: mpsc::Receiver<Output>,
    mut guard: RequestGuard,
    leases: Leases,
    counted: InFlightGuard,
) -> Result<Response, ApiError> {
    let pending = run.pending().clone();
    let request_id = completion.id.clone();
    guard.on_async_cleanup(move || async move {
        let _counted = counted;
        // Calls still waiting: the request was cut short, by its deadline
        // or by its client hanging up (R3's timeout order: notices, then
        // eviction). Read from the notices, which close the table under
        // the same lock: a call recorded after a separate look would get a
        // notice and leave its session to be given back.
        let notices =
            pending.take_cancel_notices("the request ended before the tool call finished");
        let cut_short = !notices.is_empty();
        let report = notices.run().await;
        if cut_short {
            leases.evict(
                "its request ended during a tool call (its deadline passed, or its client \
                 went away)",
            );
        }
        if !report.is_complete() {
            tracing::warn!(
                request_id,
                timed_out = ?report.timed_out(),
                panicked = ?report.panicked(),
                skipped = ?report.skipped(),
                "remote cleanup gave up on some notices"
            );
        }
    });
    run.spawn();
    let mut answer = String::new();
    let mut count = 0;
    loop {
        match output.recv().await {
            Some(Output::Token(text)) => {
                answer.push_str(&text);
                count += 1;
            }
            Some(Output::Progress(_)) => {}
            Some(Output::Done) => break,
            Some(Output::Failed(message)) => return Err(ApiError::upstream(message)),
            None => return Err(ApiError::upstream(MODEL_FAILED)),
        }
    }
    drop(guard);
    Ok(Json(completion.message(&answer, count)).into_response())
}

/// Seconds since the Unix epoch, for the `created` field clients display.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::response::sse::Sse;
    use axum::response::IntoResponse;
    use futures_util::StreamExt;
    use tokio::sync::mpsc;

    use super::chunks;
    use crate::model::Output;
    use crate::openai::Completion;

    /// The SSE text of `chunks` for the model's `outputs`, for a prompt of
    /// three tokens, with the usage chunk when `stream_usage`.
    async fn streamed(outputs: Vec<Output>, stream_usage: bool) -> String {
        let (tx, rx) = mpsc::channel(outputs.len().max(1));
        for output in outputs {
            tx.send(output).await.expect("the channel has room");
        }
        drop(tx);
        let completion = Completion {
            id: "chatcmpl-1".to_owned(),
            model: "m".to_owned(),
            created: 0,
            prompt_tokens: 3,
            stream_usage,
        };
        let events = chunks(completion, rx).map(Ok::<_, Infallible>);
        let body = Sse::new(events).into_response().into_body();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .expect("the body is read");
        String::from_utf8(bytes.to_vec()).expect("SSE is text")
    }

    #[test]
    fn completion_ids_differ_within_a_process_and_across_processes() {
        let (one, other) = (super::CompletionIds::new(), super::CompletionIds::new());
        let ids = [one.next(), one.next(), other.next()];
        assert!(ids[0].starts_with("chatcmpl-"), "{ids:?}");
        assert_eq!(ids[0].len(), "chatcmpl-".len() + 12 + "-1".len(), "{ids:?}");
        assert_ne!(ids[0], ids[1]);
        assert_ne!(ids[0], ids[2], "another process's first id");
    }

    #[tokio::test]
    async fn only_a_finished_answer_ends_with_finish_reason_stop() {
        let stop = r#""finish_reason":"stop""#;
        let done = streamed(vec![Output::Token("Hi".to_owned()), Output::Done], false).await;
        let last = done.trim_end().rsplit("\n\n").next().unwrap_or_default();
        assert!(last.contains(stop), "the last event says stop: {done}");
        let failed = streamed(
            vec![
                Output::Token("Hi".to_owned()),
                Output::Failed("MCP server `py` went away".to_owned()),
            ],
            false,
        )
        .await;
        assert!(failed.contains("event: error\n"), "{failed}");
        assert!(!failed.contains(stop), "{failed}");
        let cut = streamed(vec![Output::Token("Hi".to_owned())], false).await;
        assert!(cut.contains("model_error"), "{cut}");
        assert!(!cut.contains(stop), "{cut}");
    }

    /// The JSON of each `data:` line of `sse`.
    fn data(sse: &str) -> Vec<serde_json::Value> {
        sse.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("each data line is JSON"))
            .collect()
    }

    #[tokio::test]
    async fn a_stream_asked_for_its_usage_ends_with_a_usage_chunk() {
        let outputs = || {
            vec![
                Output::Token("Hello".to_owned()),
                Output::Token(" there".to_owned()),
                Output::Done,
            ]
        };
        let chunks = data(&streamed(outputs(), true).await);
        let (usage, answer) = chunks.split_last().expect("the stream has chunks");
        assert_eq!(answer.len(), 3, "two of text and the stop: {chunks:?}");
        for chunk in answer {
            assert_eq!(chunk["usage"], serde_json::Value::Null, "{chunk}");
            assert_eq!(
                chunk["choices"].as_array().map(Vec::len),
                Some(1),
                "{chunk}"
            );
        }
        assert_eq!(usage["object"], "chat.completion.chunk");
        assert_eq!(usage["choices"], serde_json::json!([]));
        assert_eq!(
            usage["usage"],
            serde_json::json!({ "prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5 })
        );

        let unasked = data(&streamed(outputs(), false).await);
        assert_eq!(unasked.len(), 3, "{unasked:?}");
        assert!(
            unasked.iter().all(|chunk| chunk.get("usage").is_none()),
            "{unasked:?}"
        );

        let failed = streamed(
            vec![
                Output::Token("Hi".to_owned()),
                Output::Failed("MCP server `py` went away".to_owned()),
            ],
            true,
        )
        .await;
        assert!(
            !failed.contains("total_tokens"),
            "no usage after an error: {failed}"
        );
    }
}
