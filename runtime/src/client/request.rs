//! [`RequestBuilder`]: one outbound call, before it is sent.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{
    HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, COOKIE, PROXY_AUTHORIZATION,
};
use http::{HeaderMap, Method};
use serde::Serialize;
use url::Url;

use crate::deadline::Deadline;

use super::call::{self, Sender};
use super::engine::{self, Call};
use super::transport::{ResponseBody, Transport, TransportError};
use super::{Attempt, CallOptions, Client, ClientError, Response};

/// The future of [`RequestBuilder::send`], as reqwest's `Pending`: a
/// named type, to keep in a struct of one's own. It does nothing until
/// polled, and reads the deadline then.
#[must_use = "futures do nothing unless you .await or poll them"]
pub struct Pending {
    inner: Pin<Box<dyn Future<Output = Result<Response, ClientError>> + Send>>,
}

impl Future for Pending {
    type Output = Result<Response, ClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

/// An outbound call being put together; [`send`](RequestBuilder::send) makes it.
///
/// Its `Debug` shows the method, the URL with any user name and password
/// replaced by `***`, and the headers (credentials shown as `Sensitive`),
/// not the client.
#[must_use = "a request does nothing until it is sent"]
pub struct RequestBuilder {
    pub(super) client: Client,
    pub(super) method: Method,
    pub(super) url: String,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    pub(super) options: CallOptions,
    pub(super) timeout: Option<Duration>,
    pub(super) error: Option<ClientError>,
}

impl RequestBuilder {
    pub(super) fn new(client: Client, method: Method, url: String) -> Self {
        Self {
            client,
            method,
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            options: CallOptions::new(),
            timeout: None,
            error: None,
        }
    }

    /// Adds a header. A value that is not valid HTTP makes
    /// [`send`](RequestBuilder::send) fail with an error that names its
    /// header; a name that is not valid HTTP, with one that says so. An
    /// `Authorization`, `Proxy-Authorization` or `Cookie` value is marked
    /// sensitive (kept out of debug output).
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        HeaderValue: TryFrom<V>,
    {
        match (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            (Ok(name), Ok(value)) => {
                let value = sensitive_if_secret(&name, value);
                self.headers.append(name, value);
            }
            (Err(_), _) => self.fail("a header name is not valid HTTP"),
            (Ok(name), Err(_)) => {
                self.fail(&format!("the value of header `{name}` is not valid HTTP"))
            }
        }
        self
    }

    /// Adds `headers`, replacing the headers of the same names set before,
    /// as reqwest's `headers` does (where [`header`](Self::header) appends).
    /// `Authorization`, `Proxy-Authorization` and `Cookie` values are
    /// marked sensitive.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::header::{HeaderMap, ACCEPT, USER_AGENT};
    /// use timebox::client::Client;
    /// use timebox::config::Config;
    ///
    /// let mut defaults = HeaderMap::new();
    /// defaults.insert(USER_AGENT, "reports/1.0".parse().unwrap());
    /// defaults.insert(ACCEPT, "application/json".parse().unwrap());
    /// let request = Client::new(&Config::default())
    ///     .get("http://127.0.0.1:1/reports")
    ///     .header(ACCEPT, "text/csv") // replaced by the map's `Accept`
    ///     .headers(defaults);
    /// # let _ = request;
    /// ```
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        for name in headers.keys() {
            self.headers.remove(name);
        }
        for (name, value) in &headers {
            let value = sensitive_if_secret(name, value.clone());
            self.headers.append(name.clone(), value);
        }
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the body to `json` serialized, and `Content-Type:
    /// application/json` unless a content type is set. As reqwest's: a
    /// value that does not serialize makes [`send`](Self::send) fail.
    ///
    /// # Examples
    ///
    /// A simulated host that echoes what it got (feature `sim`):
    ///
    #[cfg_attr(feature = "sim", doc = "```")]
    #[cfg_attr(not(feature = "sim"), doc = "```ignore")]
    /// use std::collections::BTreeMap;
    /// use axum::{http::HeaderMap, routing::post, Router};
    /// use timebox::sim::Sim;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     let sim = Sim::new(1);
    ///     let echo = post(|headers: HeaderMap, body: String| async move {
    ///         format!("{:?} {body}", headers["content-type"])
    ///     });
    ///     sim.net().host("api", Router::new().route("/users", echo));
    ///     let user = BTreeMap::from([("name", "ada")]);
    ///     let sent = sim.client().post("http://api/users").json(&user).send().await;
    ///     let echoed = sent.unwrap().text().await.unwrap();
    ///     assert_eq!(echoed, r#""application/json" {"name":"ada"}"#);
    /// }
    /// ```
    pub fn json<T: Serialize + ?Sized>(mut self, json: &T) -> Self {
        match serde_json::to_vec(json) {
            Ok(body) => {
                self.set_content_type("application/json");
                self.body = body.into();
            }
            Err(err) => self.fail(&format!("the JSON body does not serialize: {err}")),
        }
        self
    }

    /// Sets the body to `form` URL-encoded, and `Content-Type:
    /// application/x-www-form-urlencoded` unless a content type is set.
    ///
    /// # Examples
    ///
    /// A simulated host that echoes what it got (feature `sim`):
    ///
    #[cfg_attr(feature = "sim", doc = "```")]
    #[cfg_attr(not(feature = "sim"), doc = "```ignore")]
    /// use axum::{http::HeaderMap, routing::post, Router};
    /// use timebox::sim::Sim;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     let sim = Sim::new(1);
    ///     let echo = post(|headers: HeaderMap, body: String| async move {
    ///         format!("{:?} {body}", headers["content-type"])
    ///     });
    ///     sim.net().host("api", Router::new().route("/login", echo));
    ///     let form = [("user", "ada"), ("note", "a & b")];
    ///     let sent = sim.client().post("http://api/login").form(&form).send().await;
    ///     let echoed = sent.unwrap().text().await.unwrap();
    ///     assert_eq!(echoed, r#""application/x-www-form-urlencoded" user=ada&note=a+%26+b"#);
    /// }
    /// ```
    pub fn form<T: Serialize + ?Sized>(mut self, form: &T) -> Self {
        match serde_urlencoded::to_string(form) {
            Ok(body) => {
                self.set_content_type("application/x-www-form-urlencoded");
                self.body = body.into();
            }
            Err(err) => self.fail(&format!("the form body does not serialize: {err}")),
        }
        self
    }

    /// Appends `query`, URL-encoded, to the URL's query string, as
    /// reqwest's does (`&[("page", "2")]`, a map or a struct); a query with
    /// no pairs (a struct whose fields are all `None`) leaves the URL as it
    /// was.
    ///
    /// # Examples
    ///
    /// A simulated host that echoes the query it got (feature `sim`):
    ///
    #[cfg_attr(feature = "sim", doc = "```")]
    #[cfg_attr(not(feature = "sim"), doc = "```ignore")]
    /// use axum::{extract::RawQuery, routing::get, Router};
    /// use timebox::sim::Sim;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     let sim = Sim::new(1);
    ///     let echo = get(|RawQuery(query): RawQuery| async move { query.unwrap_or_default() });
    ///     sim.net().host("api", Router::new().route("/search", echo));
    ///     let sent = sim
    ///         .client()
    ///         .get("http://api/search?lang=en")
    ///         .query(&[("q", "rust async"), ("page", "2")])
    ///         .send()
    ///         .await;
    ///     let echoed = sent.unwrap().text().await.unwrap();
    ///     assert_eq!(echoed, "lang=en&q=rust+async&page=2");
    /// }
    /// ```
    pub fn query<T: Serialize + ?Sized>(mut self, query: &T) -> Self {
        let encoded = match serde_urlencoded::to_string(query) {
            Ok(encoded) if encoded.is_empty() => return self,
            Ok(encoded) => encoded,
            Err(err) => {
                self.fail(&format!("the query does not serialize: {err}"));
                return self;
            }
        };
        match Url::parse(&self.url) {
            Ok(mut url) => {
                let query = match url.query() {
                    Some(existing) if !existing.is_empty() => format!("{existing}&{encoded}"),
                    _ => encoded,
                };
                url.set_query((!query.is_empty()).then_some(query.as_str()));
                self.url = url.into();
            }
            Err(err) => self.fail(&does_not_parse(err)),
        }
        self
    }

    /// Sets `Authorization: Bearer <token>`, marked sensitive (kept out of
    /// debug output). It replaces an `Authorization` header set before,
    /// where reqwest's adds a second one beside it.
    pub fn bearer_auth<T: fmt::Display>(mut self, token: T) -> Self {
        match HeaderValue::try_from(format!("Bearer {token}")) {
            Ok(mut value) => {
                value.set_sensitive(true);
                self.headers.insert(AUTHORIZATION, value);
            }
            Err(_) => self.fail("the bearer token is not a valid header value"),
        }
        self
    }

    /// Sets `Authorization: Basic` for `username` and `password`, encoded
    /// as reqwest's is (`username:` with no password) and marked
    /// sensitive. It replaces an `Authorization` header set before, as
    /// [`bearer_auth`](Self::bearer_auth) does.
    ///
    /// A user name and password in the URL (`http://user:pass@host/`) are
    /// sent the same way, as in reqwest, unless an `Authorization` header
    /// is set; they never go in the request line.
    pub fn basic_auth<U: fmt::Display, P: fmt::Display>(
        mut self,
        username: U,
        password: Option<P>,
    ) -> Self {
        let credentials = match password {
            Some(password) => format!("{username}:{password}"),
            None => format!("{username}:"),
        };
        self.headers.insert(AUTHORIZATION, basic(&credentials));
        self
    }

    /// Bounds the whole call, every attempt and the reading of the body
    /// included, to `timeout` from when it is sent, as reqwest's does for its
    /// one attempt. It shortens the current deadline, never lengthens it.
    /// It is each attempt's timeout too, instead of
    /// `http.client.timeout_secs`, as reqwest's replaces its client's: a
    /// call given longer than that for a slow endpoint is not cut at
    /// `timeout_secs` and retried. So an attempt that runs out of time has
    /// used the call's: attempts that fail (a `503`, a refused connection)
    /// are still retried within it, attempts that time out are not, and
    /// the host's breaker counts one as a cancelled call, as it does a
    /// call a route's deadline ends: not at all, unless it ran past
    /// `breaker.slow_call_duration_threshold_secs`, and then as slow (as a
    /// failure with `breaker.cancelled_call_outcome = "failure"`). A reqwest
    /// client given with
    /// [`ClientBuilder::reqwest`](super::ClientBuilder::reqwest) keeps its own
    /// `timeout`, which this does not replace.
    ///
    /// Without it, the body is bounded by the current deadline alone:
    /// `timeout_secs` ends with the response's head, unlike reqwest's
    /// client-wide timeout, so that a long stream is not cut at it. Give a
    /// call with no deadline whose body may stall a `.timeout()`.
    ///
    /// # Examples
    ///
    /// A host that takes 5 s, asked with a second to answer (feature `sim`):
    ///
    #[cfg_attr(feature = "sim", doc = "```")]
    #[cfg_attr(not(feature = "sim"), doc = "```ignore")]
    /// use std::time::Duration;
    /// use axum::{routing::get, Router};
    /// use timebox::sim::Sim;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     let sim = Sim::new(1);
    ///     let slow = get(|| async {
    ///         tokio::time::sleep(Duration::from_secs(5)).await;
    ///         "late"
    ///     });
    ///     sim.net().host("api", Router::new().route("/", slow));
    ///     let start = tokio::time::Instant::now();
    ///     let sent = sim
    ///         .client()
    ///         .get("http://api/")
    ///         .timeout(Duration::from_secs(1))
    ///         .send()
    ///         .await;
    ///     // The call's deadline: it ends at 1 s, and is not retried.
    ///     assert!(sent.unwrap_err().is_deadline_exceeded());
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1));
    ///     assert_eq!(sim.net().events().len(), 1);
    /// }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Bounds each attempt, until its response's head, by `timeout`
    /// instead of `http.client.timeout_secs`, and nothing else: unlike
    /// [`timeout`](Self::timeout) it sets no deadline, so no deadline
    /// header goes out and the body is not bounded by it. For an endpoint
    /// that answers only once its work is done (a long job that replies in
    /// one piece), whose call a deadline of the caller's bounds, if any.
    /// With both, this one bounds the attempts and `timeout` the call. Zero
    /// is refused when the request is sent ([`ClientError::InvalidRequest`]).
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.options = self.options.attempt_timeout(timeout);
        self
    }

    fn set_content_type(&mut self, content_type: &'static str) {
        if !self.headers.contains_key(CONTENT_TYPE) {
            self.headers
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
    }

    /// At most `retries` retries for this call, instead of
    /// `http.client.max_retries`. The deadline and the retry budget still
    /// bound them.
    pub fn retries(mut self, retries: u32) -> Self {
        self.options = self.options.retries(retries);
        self
    }

    /// Retries this call even though its method is not idempotent (POST,
    /// PATCH). Every attempt carries the same `Idempotency-Key` header (the
    /// caller's own, when set) so the server can tell a retry from a new
    /// request.
    pub fn retry_non_idempotent(mut self) -> Self {
        self.options = self.options.retry_non_idempotent();
        self
    }

    /// Hedges this call, whatever `http.client.hedge.enabled` says (unless
    /// it is [`long_running`](Self::long_running)):
    /// when the first attempt has not answered after the delay
    /// (`http.client.hedge.delay_ms`, else the host's p95 latency), a
    /// second one, marked `x-timebox-attempt: 2;hedge`, is sent beside it,
    /// and the first answer wins (not a failure of the attempt's own, nor a
    /// timebox server's `x-timebox-shed` refusal, while the other still
    /// runs). Only a request that is safe to send twice
    /// (an idempotent method) is hedged, and a hedge is sent only while the
    /// time left covers the host's median latency, the host's retry bucket
    /// is at least half full (it pays `hedge_cost`) and, with this hedge,
    /// no more than `max_extra_load` of the host's requests that may be
    /// hedged, in the last 10 s, were hedged (so a host with fewer than 20
    /// such requests in 10 s is not hedged at the default 0.05).
    ///
    /// ```
    /// # async fn run(client: timebox::client::Client) -> Result<(), timebox::client::ClientError> {
    /// let response = client.get("http://search.internal/q?term=rust").hedge().send().await?;
    /// # Ok(()) }
    /// ```
    pub fn hedge(mut self) -> Self {
        self.options = self.options.hedge();
        self
    }

    /// Takes this call for one whose answer comes only once its work is
    /// done (a long job that replies in one piece, a tool call), so that
    /// how long it takes says nothing of the host's health. The host's
    /// circuit breaker counts its answer (a `5xx` is still a failure, a
    /// refused connection too) but never counts it as slow, however long
    /// it runs past `breaker.slow_call_duration_threshold_secs`; an attempt
    /// cut short, by the deadline or by its attempt timeout, counts for
    /// nothing. It is not hedged (its latency would say nothing of the
    /// host's either), whatever [`hedge`](Self::hedge) or
    /// `http.client.hedge.enabled` say.
    ///
    /// It changes no bound: give it an
    /// [`attempt_timeout`](Self::attempt_timeout) as long as the work may
    /// take, or `http.client.timeout_secs` (30 s) cuts each attempt before
    /// its answer's head, and an idempotent call is then retried, starting
    /// the work again. Bound the call with a deadline.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # async fn run(client: timebox::client::Client) -> Result<(), timebox::client::ClientError> {
    /// let report = client
    ///     .post("http://reports.internal/build")
    ///     .attempt_timeout(Duration::from_secs(600))
    ///     .long_running()
    ///     .send()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn long_running(mut self) -> Self {
        self.options = self.options.long_running();
        self
    }

    /// Takes `options` as a whole, as the other doors of the client take
    /// them (see [`CallOptions`]): they replace what
    /// [`retries`](Self::retries), [`retry_non_idempotent`](Self::retry_non_idempotent),
    /// [`hedge`](Self::hedge), [`attempt_timeout`](Self::attempt_timeout)
    /// and [`long_running`](Self::long_running) set before.
    pub fn call_options(mut self, options: CallOptions) -> Self {
        self.options = options;
        self
    }

    /// Sends the request: attempts, retries and redirects within the
    /// current deadline.
    ///
    /// The deadline is the one current where the returned future first
    /// runs, as for [`bounded`](crate::deadline::bounded): a call handed to
    /// `tokio::spawn` runs with none unless the task is wrapped in
    /// `deadline.scope(..)` (D4), and one built inside a handler and run
    /// under [`unscoped`](crate::deadline::unscoped) is not bounded by the
    /// request's. ([`ClientLayer`](super::ClientLayer) takes it where its
    /// `call` is made.)
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the deadline passed, the host's breaker is open, too
    /// many redirects, or the last attempt failed without a response. A
    /// response with an error status is a `Response`, not an error.
    ///
    /// # Panics
    ///
    /// Polled outside a tokio runtime with its timer enabled, with tokio's
    /// message (see [Timers and paused clocks](super#timers-and-paused-clocks)).
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future stops the call; a retry that was paid for but not
    /// yet sent gives its tokens back.
    pub fn send(self) -> Pending {
        Pending {
            inner: Box::pin(async move {
                match self.timeout {
                    Some(timeout) => Deadline::after(timeout).scope(self.send_now()).await,
                    None => self.send_now().await,
                }
            }),
        }
    }

    /// Drives the call through the engine, over the client's transport.
    async fn send_now(self) -> Result<Response, ClientError> {
        let Self {
            client,
            method,
            url,
            mut headers,
            body,
            options,
            // `send` applies it as a deadline scope around the call, and
            // it is each attempt's timeout.
            timeout,
            error,
        } = self;
        if let Some(error) = error {
            return Err(error);
        }
        // A zero `timeout` is a deadline already passed, not an attempt
        // timeout of zero.
        let options = CallOptions {
            attempt_timeout: options
                .attempt_timeout
                .or(timeout.filter(|timeout| !timeout.is_zero())),
            ..options
        };
        let mut url =
            Url::parse(&url).map_err(|err| ClientError::InvalidRequest(does_not_parse(err)))?;
        if let Some(credentials) = take_credentials(&mut url) {
            headers.entry(AUTHORIZATION).or_insert(credentials);
        }
        // What `Response::url` says when no attempt named its own.
        let asked = url.clone();
        let request = engine::Request::to_url(method, url, headers, body)?;
        let call = Call::new(Arc::clone(&client.rules), request, options)?;
        let deadline = call.deadline();
        let observers = client.rules.observers.clone();
        let sender = ByTransport(&*client.transport);
        let head = call::drive(call, sender).await?;
        Ok(Response::new(head, deadline, observers, asked))
    }

    fn fail(&mut self, message: &str) {
        if self.error.is_none() {
            self.error = Some(ClientError::InvalidRequest(message.to_owned()));
        }
    }
}

/// What an invalid request says of a URL that does not parse: not the URL,
/// which may hold a password.
fn does_not_parse(err: url::ParseError) -> String {
    format!("the url does not parse: {err}")
}

impl fmt::Debug for RequestBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBuilder")
            .field("method", &self.method)
            .field("url", &redacted(&self.url))
            .field("headers", &self.headers)
            .field("body_bytes", &self.body.len())
            .field("options", &self.options)
            .field("timeout", &self.timeout)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// `url` with its user name and password, if any, shown as `***`; one that
/// does not parse and may hold them (it has an `@`), not shown.
fn redacted(url: &str) -> std::borrow::Cow<'_, str> {
    match Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            // Both succeed on a URL that has credentials.
            let _ = parsed.set_username("***");
            let _ = parsed.set_password(None);
            String::from(parsed).into()
        }
        Err(_) if url.contains('@') => "<a URL that does not parse, not shown>".into(),
        _ => url.into(),
    }
}

/// `Authorization: Basic` for `user:password`, marked sensitive.
fn basic(credentials: &str) -> HeaderValue {
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    let mut value =
        HeaderValue::try_from(format!("Basic {encoded}")).expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
}

/// Takes the user name and password out of `url` (percent-decoded, as
/// reqwest does), as `Authorization: Basic`; `None` when it has none.
fn take_credentials(url: &mut Url) -> Option<HeaderValue> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decoded = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8_lossy()
            .into_owned()
    };
    let credentials = format!(
        "{}:{}",
        decoded(url.username()),
        url.password().map(decoded).unwrap_or_default()
    );
    // Only a URL with no host keeps them (`file:`), which no door sends.
    if url.set_username("").is_err() || url.set_password(None).is_err() {
        return None;
    }
    Some(basic(&credentials))
}

/// `Client`'s door to the engine: each attempt through its transport.
struct ByTransport<'a>(&'a dyn Transport);

impl Sender<Bytes> for ByTransport<'_> {
    type Response = http::Response<ResponseBody>;

    fn fork(&mut self) -> Option<Self> {
        Some(Self(self.0))
    }

    fn send(
        &mut self,
        mut request: http::Request<Bytes>,
        attempt: Attempt,
        url: Option<&Url>,
    ) -> impl Future<Output = Result<Self::Response, TransportError>> + Send {
        request.extensions_mut().insert(attempt);
        let sent = self.0.send(request);
        let to = url.cloned();
        async move {
            let mut response = sent.await?;
            if let Some(url) = to {
                response.extensions_mut().insert(SentTo(url));
            }
            Ok(response)
        }
    }
}

/// The URL an answer came from, which [`Response::url`] says: the last
/// hop's, when the call followed redirects.
#[derive(Debug, Clone)]
pub(super) struct SentTo(pub(super) Url);

/// `value`, marked sensitive (kept out of debug output) when `name` is one
/// that carries a secret: `Authorization`, `Proxy-Authorization`, `Cookie`.
fn sensitive_if_secret(name: &HeaderName, mut value: HeaderValue) -> HeaderValue {
    if [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE].contains(name) {
        value.set_sensitive(true);
    }
    value
}
