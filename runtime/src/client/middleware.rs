//! [`Timebox`]: the client's rules as a reqwest middleware (feature
//! `reqwest-middleware`; reqwest-middleware 0.5, over reqwest 0.13).
//!
//! A service that already sends through a
//! `reqwest_middleware::ClientWithMiddleware` adopts timebox's outbound rules
//! (attempts within the deadline, retries that fit the time left and the
//! host's budget, breakers, redirects hop by hop, the deadline headers) by
//! building its client with [`reqwest_builder`] and adding [`Timebox`]:
//!
//! ```
//! use timebox::client::middleware::{reqwest_builder, Timebox};
//! use timebox::config::Config;
//!
//! let config = Config::default();
//! let client = reqwest_middleware::ClientBuilder::new(reqwest_builder().build().unwrap())
//!     .with(Timebox::new(&config))
//!     .build();
//! # let _ = client;
//! ```
//!
//! - **Order.** Middlewares run in the order they are added. One added
//!   after `Timebox` runs once per attempt (each attempt's [`Attempt`] is
//!   in the extensions); one added before it, once for the whole call.
//!   A middleware that may wait (a rate limiter, a token refresh, a
//!   concurrency gate) goes before `Timebox`: after it, its wait falls
//!   inside each attempt, after the deadline header was written and the
//!   attempt's timeout started, so the host is told more time than is left,
//!   and an attempt that times out in that wait counts against the host's
//!   breaker. (reqwest-middleware has no readiness step, where
//!   [`ClientLayer`](super::ClientLayer) waits for a tower service below it
//!   before each attempt starts.)
//!   Each attempt is already a client span of its own
//!   (`timebox.client.attempt`, as OpenTelemetry's HTTP client conventions
//!   say), so `reqwest_tracing::TracingMiddleware` after `Timebox` makes a
//!   second client span of the same request, a child of timebox's. timebox
//!   does not inject trace context (`traceparent`): keep a middleware that
//!   does (reqwest-tracing's, under its `opentelemetry_*` features) after
//!   `Timebox` wherever traces must cross to the next service.
//! - **One call's options.** A call asks for more retries, a retry of a
//!   POST, a hedge, an attempt timeout of its own or to be taken for
//!   long-running with a [`CallOptions`] in its
//!   extensions: `client.post(url).with_extension(CallOptions::new()
//!   .retry_non_idempotent())`.
//! - **reqwest-retry.** Don't combine them: `Timebox` retries already, within
//!   the deadline and the host's budget, and a second retrying layer
//!   multiplies the attempts the budget exists to bound. Replace
//!   `RetryTransientMiddleware` with `Timebox`.
//! - **Redirects.** timebox follows them hop by hop, so reqwest must
//!   not: [`reqwest_builder`] turns its redirects off. A client that follows
//!   them itself is refused at its first redirect: the call fails with an
//!   error whose source is a [`RedirectsOn`](super::RedirectsOn) that says so
//!   and how to fix it. reqwest tells that only by the response's URL,
//!   which is not the one requested: so a middleware that sends the request
//!   elsewhere (service discovery, a signer adding to the query) goes before
//!   `Timebox`, whose breakers, budgets and redirects then see where the
//!   request really goes. After it, every call fails the same way, once
//!   the request was sent and answered. A redirect to another origin
//!   (scheme, host and port) is the answer, not followed: the reqwest
//!   client adds its default headers to every request it sends, and such a
//!   hop must not carry an `Authorization` or a `Cookie`: timebox cannot
//!   take off what reqwest adds.
//! - **Bodies.** A body reqwest can clone (bytes, text, JSON, a form) is
//!   sent again on a retry or a `307`/`308`. A streaming body is sent once:
//!   the call is never retried, and a redirect that would resend the body is
//!   the answer.
//! - **The body** of the response is reqwest's own: reading it is not
//!   bounded by the call's deadline, as `Client`'s is. Read it under
//!   [`bounded`](crate::deadline::bounded), or inside a handler's gate.
//! - **reqwest's `.timeout()`** on a request applies to each attempt, not
//!   to the whole call, and its expiry is an error of the chain, not
//!   retried; `http.client.timeout_secs` is the attempt timeout timebox
//!   retries. Bound the whole call with a deadline instead.
//! - **Errors.** An error of the rest of the chain (reqwest's, or another
//!   middleware's) comes back as it was. timebox's own (the deadline, an
//!   open breaker, an attempt timeout, too many redirects) come back as
//!   `reqwest_middleware::Error::Middleware` holding the
//!   [`ClientError`]; its `source()` chain holds the
//!   [`DeadlineExceeded`](crate::deadline::DeadlineExceeded) when the
//!   deadline ended the call, so
//!   [`is_deadline_exceeded`](crate::deadline::is_deadline_exceeded) holds.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::Extensions;
use reqwest_middleware::{Middleware, Next};
use url::Url;

use crate::config::Config;
use crate::entropy::Entropy;
use crate::retry::RetryBudgets;

use super::call::{self, Sender};
use super::engine::{self, Answer, Call};
use super::rules::Rules;
use super::transport::{refuse_redirected, TransportError};
use super::{Attempt, CallOptions, ClientError};

/// A `reqwest::ClientBuilder` with reqwest's redirects off, as
/// [`Timebox`] needs them.
pub fn reqwest_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none())
}

/// The reqwest middleware that applies timebox's outbound rules; see the
/// [module docs](self).
///
/// Clones share the per-host retry budgets and breakers: make one per
/// application.
///
/// # Panics
///
/// A call through it panics when polled outside a tokio runtime with its
/// timer enabled, with tokio's message (see
/// [Timers and paused clocks](super#timers-and-paused-clocks)).
#[derive(Debug, Clone)]
pub struct Timebox {
    rules: Arc<Rules>,
}

impl Timebox {
    /// The middleware of `config.http.client` and `config.breaker`; backoff
    /// jitter and idempotency keys come from a source seeded by the
    /// operating system.
    #[must_use]
    pub fn new(config: &Config) -> Self {
        Self {
            rules: Arc::new(Rules::new(config, Entropy::from_os()).within_origin()),
        }
    }

    /// Draws backoff jitter and idempotency keys from `entropy` instead (a
    /// seeded one replays). A clone of the middleware made before this call
    /// keeps drawing from the old source; both still share the per-host
    /// budgets, breakers and latencies.
    #[must_use]
    pub fn entropy(self, entropy: Entropy) -> Self {
        Self {
            rules: Rules::with_entropy(self.rules, entropy),
        }
    }

    /// The retry budgets, one per upstream host.
    #[must_use]
    pub fn budgets(&self) -> &RetryBudgets {
        &self.rules.budgets
    }
}

#[async_trait::async_trait]
impl Middleware for Timebox {
    async fn handle(
        &self,
        mut request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let headers = std::mem::take(request.headers_mut());
        let (method, url) = (request.method().clone(), request.url().clone());
        let body = Payload::of(&request);
        let mut call_request =
            engine::Request::to_url(method, url, headers, body).map_err(into_error)?;
        call_request.version = request.version();
        let options = CallOptions::in_extensions(extensions);
        let call = Call::new(Arc::clone(&self.rules), call_request, options).map_err(into_error)?;
        let sender = ByNext {
            next,
            extensions: ChainExtensions::Callers(extensions),
            timeout: request.timeout().copied(),
            template: Some(request),
        };
        call::drive(call, sender).await.map_err(into_error)
    }
}

impl Answer for reqwest::Response {
    fn status(&self) -> http::StatusCode {
        reqwest::Response::status(self)
    }

    fn headers(&self) -> &http::HeaderMap {
        reqwest::Response::headers(self)
    }
}

/// The body of an attempt, as the engine holds it: the caller's (kept in
/// the request [`ByNext`] copies), or none.
#[derive(Clone, Copy)]
enum Payload {
    /// The caller's body: `replayable` when reqwest can copy it (bytes in
    /// memory), not when it is a stream.
    Callers { replayable: bool },
    /// No body: a redirect that became a GET.
    None,
}

impl Payload {
    fn of(request: &reqwest::Request) -> Self {
        match request.body() {
            None => Self::None,
            Some(body) => Self::Callers {
                replayable: body.as_bytes().is_some(),
            },
        }
    }
}

impl engine::Body for Payload {
    fn replayable(&self) -> bool {
        !matches!(self, Self::Callers { replayable: false })
    }

    fn try_clone(&self) -> Option<Self> {
        self.replayable().then_some(*self)
    }

    fn empty() -> Self {
        Self::None
    }
}

/// The middleware's door to the engine: each attempt through the rest of
/// the chain.
struct ByNext<'a, 'e> {
    next: Next<'a>,
    extensions: ChainExtensions<'e>,
    /// The caller's request, its headers taken by the engine: copied for
    /// each attempt (its body, reqwest's timeout, version and extensions
    /// with it), or, when its body is a stream, sent itself once.
    template: Option<reqwest::Request>,
    /// The caller's reqwest timeout, for a request made afresh.
    timeout: Option<Duration>,
}

/// The extensions the rest of the chain gets: the caller's, or, for a
/// hedge sent beside the first attempt, a copy of them.
enum ChainExtensions<'e> {
    Callers(&'e mut Extensions),
    Copy(Extensions),
}

impl ChainExtensions<'_> {
    fn get_mut(&mut self) -> &mut Extensions {
        match self {
            Self::Callers(extensions) => extensions,
            Self::Copy(extensions) => extensions,
        }
    }
}

impl ByNext<'_, '_> {
    /// The request an attempt with `body` starts from.
    fn outgoing(&mut self, body: Payload, url: Url) -> Result<reqwest::Request, TransportError> {
        let copy = self.template.as_ref().and_then(reqwest::Request::try_clone);
        let mut request = match (copy, body) {
            (Some(copy), _) => copy,
            (None, Payload::Callers { .. }) => self.template.take().ok_or_else(|| {
                TransportError::Local("the request's streaming body was already sent".into())
            })?,
            // A redirect to a GET after a streaming body: a request of its
            // own, with the caller's timeout.
            (None, Payload::None) => {
                let mut request = reqwest::Request::new(http::Method::GET, url.clone());
                *request.timeout_mut() = self.timeout;
                request
            }
        };
        if matches!(body, Payload::None) {
            *request.body_mut() = None;
        }
        *request.url_mut() = url;
        Ok(request)
    }
}

impl Sender<Payload> for ByNext<'_, '_> {
    type Response = reqwest::Response;

    fn fork(&mut self) -> Option<Self> {
        let template = self.template.as_ref()?.try_clone()?;
        Some(Self {
            next: self.next.clone(),
            extensions: ChainExtensions::Copy(self.extensions.get_mut().clone()),
            template: Some(template),
            timeout: self.timeout,
        })
    }

    fn send(
        &mut self,
        request: http::Request<Payload>,
        attempt: Attempt,
        url: Option<&Url>,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
        let (parts, body) = request.into_parts();
        // The engine keeps the `Url` this door gave it, and the one of every
        // redirect it follows.
        let url = match url {
            Some(url) => Ok(url.clone()),
            None => Url::parse(&parts.uri.to_string())
                .map_err(|err| TransportError::Local(Box::new(err))),
        };
        let sent = url.and_then(|url| {
            let mut request = self.outgoing(body, url.clone())?;
            *request.method_mut() = parts.method;
            *request.headers_mut() = parts.headers;
            *request.version_mut() = parts.version;
            let extensions = self.extensions.get_mut();
            extensions.insert(attempt);
            Ok((url, self.next.clone().run(request, extensions)))
        });
        async move {
            let (url, sent) = sent?;
            let response = sent.await.map_err(|err| match &err {
                reqwest_middleware::Error::Reqwest(reqwest) => {
                    TransportError::of_reqwest(reqwest)(Box::new(err))
                }
                // Another middleware's own error: not the host's.
                reqwest_middleware::Error::Middleware(_) => TransportError::Local(Box::new(err)),
            })?;
            refuse_redirected(&url, response)
        }
    }
}

/// The call's error as the middleware chain's: an error of the chain as it
/// was, timebox's own wrapped.
fn into_error(err: ClientError) -> reqwest_middleware::Error {
    match err {
        ClientError::Connect(source) => match source.downcast::<reqwest_middleware::Error>() {
            Ok(err) => *err,
            Err(source) => reqwest_middleware::Error::middleware(ClientError::Connect(source)),
        },
        ClientError::Transport(source) => match source.downcast::<reqwest_middleware::Error>() {
            Ok(err) => *err,
            Err(source) => reqwest_middleware::Error::middleware(ClientError::Transport(source)),
        },
        other => reqwest_middleware::Error::middleware(other),
    }
}
