//! [`Client`]: the shared state of outbound calls.

use std::sync::Arc;

use http::Method;

use crate::config::Config;
use crate::entropy::Entropy;
use crate::observe::Chain;
use crate::retry::RetryBudgets;

use super::rules::Rules;
use super::transport::{ReqwestTransport, Transport};
use super::RequestBuilder;

/// An HTTP client whose retries fit the time left.
///
/// Clones share everything: the connection pool, the per-host retry budgets
/// and the per-host circuit breakers. Make one per application.
///
/// # Examples
///
/// A `503` retried within the caller's deadline, against a host of the
/// simulated network (feature `sim`; over a real one, [`Client::new`]):
///
#[cfg_attr(feature = "sim", doc = "```")]
#[cfg_attr(not(feature = "sim"), doc = "```ignore")]
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use axum::{http::StatusCode, routing::get, Router};
/// use timebox::deadline::Deadline;
/// use timebox::sim::Sim;
///
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     let sim = Sim::new(1);
///     let calls = Arc::new(AtomicU32::new(0));
///     let counted = Arc::clone(&calls);
///     let api = Router::new().route(
///         "/",
///         get(move || {
///             let first = counted.fetch_add(1, Ordering::Relaxed) == 0;
///             async move {
///                 if first {
///                     StatusCode::SERVICE_UNAVAILABLE
///                 } else {
///                     StatusCode::OK
///                 }
///             }
///         }),
///     );
///     sim.net().host("api", api);
///     let client = sim.client();
///     let response = Deadline::after(Duration::from_secs(2))
///         .scope(client.get("http://api/").send())
///         .await
///         .unwrap();
///     assert_eq!(response.status(), StatusCode::OK);
///     assert_eq!(calls.load(Ordering::Relaxed), 2); // the 503, then the retry
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    pub(super) transport: Arc<dyn Transport>,
    pub(super) rules: Arc<Rules>,
}

impl Client {
    /// A client on the network (reqwest 0.13 with its default TLS, rustls),
    /// configured by `config.http.client` and `config.breaker`.
    ///
    /// # Panics
    ///
    /// When the TLS backend cannot be initialised (as `reqwest::Client::new`),
    /// which includes a system with no CA certificates: see
    /// [`ClientBuilder::build`].
    #[must_use]
    pub fn new(config: &Config) -> Self {
        Self::builder().config(config).build()
    }

    /// A builder, to choose the configuration (the default one unless
    /// [`ClientBuilder::config`] says otherwise), the transport and the
    /// random source.
    ///
    /// ```
    /// use timebox::client::Client;
    /// use timebox::config::Config;
    /// use timebox::entropy::Entropy;
    ///
    /// let client = Client::builder()
    ///     .config(&Config::default())
    ///     .entropy(Entropy::seeded(7))
    ///     .build();
    /// # let _ = client;
    /// ```
    pub fn builder() -> ClientBuilder {
        ClientBuilder {
            config: Config::default(),
            transport: None,
            entropy: None,
            within_origin: false,
        }
    }

    /// A GET of `url`.
    pub fn get(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// A POST to `url`.
    pub fn post(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// A PUT to `url`.
    pub fn put(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::PUT, url)
    }

    /// A PATCH to `url`.
    pub fn patch(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::PATCH, url)
    }

    /// A DELETE of `url`.
    pub fn delete(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::DELETE, url)
    }

    /// A HEAD of `url`.
    pub fn head(&self, url: impl Into<String>) -> RequestBuilder {
        self.request(Method::HEAD, url)
    }

    /// A request with any method.
    pub fn request(&self, method: Method, url: impl Into<String>) -> RequestBuilder {
        RequestBuilder::new(self.clone(), method, url.into())
    }

    /// The retry budgets, one per upstream host.
    #[must_use]
    pub fn budgets(&self) -> &RetryBudgets {
        &self.rules.budgets
    }
}

/// Builds a [`Client`]: made by [`Client::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct ClientBuilder {
    config: Config,
    transport: Option<Arc<dyn Transport>>,
    entropy: Option<Entropy>,
    /// Whether redirects stay within their origin (a caller's own reqwest
    /// client).
    within_origin: bool,
}

impl ClientBuilder {
    /// Follows `config` instead of the default configuration.
    pub fn config(mut self, config: &Config) -> Self {
        self.config = config.clone();
        self
    }

    /// Sends through `transport` instead of the network (reqwest).
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self.within_origin = false;
        self
    }

    /// Sends through `client`, an existing reqwest 0.13 `Client` (its TLS,
    /// proxy, pool and default headers), instead of a new one.
    ///
    /// The client must not follow redirects itself: build it with
    /// `.redirect(reqwest::redirect::Policy::none())`, and timebox follows
    /// them hop by hop. reqwest does not say how a client was built, so one
    /// that does follow them is refused at its first redirect: that attempt
    /// fails with [`ClientError::Transport`](super::ClientError::Transport) whose source is a
    /// [`RedirectsOn`](super::RedirectsOn) saying so.
    ///
    /// A redirect to another origin (scheme, host and port) is not followed
    /// through such a client: the redirect is the answer. The client adds
    /// its default headers to every request it sends, and a hop to another
    /// origin must not carry an `Authorization` or a `Cookie`: reqwest does
    /// not say whether it added one, and timebox cannot take it off.
    ///
    /// A timeout of the client's own (`reqwest::ClientBuilder::timeout`)
    /// ends an attempt with [`ClientError::Transport`](super::ClientError::Transport), not retried, and a
    /// failure for the host's breaker: the attempt timeout timebox retries
    /// is `http.client.timeout_secs`, and a deadline bounds the whole call.
    /// A request's own [`timeout`](super::RequestBuilder::timeout) does not
    /// replace it, as reqwest's per-request timeout would: leave the
    /// client's unset and bound calls with deadlines.
    ///
    /// ```
    /// use timebox::client::Client;
    /// use timebox::config::Config;
    ///
    /// let reqwest = reqwest::Client::builder()
    ///     .redirect(reqwest::redirect::Policy::none())
    ///     .build()
    ///     .unwrap();
    /// let client = Client::builder()
    ///     .config(&Config::default())
    ///     .reqwest(reqwest)
    ///     .build();
    /// # let _ = client;
    /// ```
    pub fn reqwest(self, client: reqwest::Client) -> Self {
        let mut builder = self.transport(Arc::new(ReqwestTransport::with_client(client)));
        builder.within_origin = true;
        builder
    }

    /// Draws backoff jitter and idempotency keys from `entropy` instead of a
    /// source seeded by the operating system.
    pub fn entropy(mut self, entropy: Entropy) -> Self {
        self.entropy = Some(entropy);
        self
    }

    /// The client.
    ///
    /// # Panics
    ///
    /// With no transport set, when the TLS backend cannot be initialised (as
    /// `reqwest::Client::new`). On Linux (and the other Unix systems but
    /// Apple's and Android), reqwest 0.13 loads the system's CA
    /// certificates then, so in an image without a CA bundle (`FROM
    /// scratch`) this panics, saying so, even for `http://` hosts: install
    /// one (the `ca-certificates` package, or `SSL_CERT_FILE` pointing at a
    /// PEM file), or hand [`reqwest`](Self::reqwest) a client with roots of
    /// its own (`tls_certs_only`).
    #[must_use]
    pub fn build(self) -> Client {
        let transport = self.transport.unwrap_or_else(|| {
            Arc::new(ReqwestTransport::new().unwrap_or_else(|err| {
                panic!(
                    "cannot initialise the HTTP client: {}; if no CA certificates were \
                     loaded, install a CA bundle (the `ca-certificates` package) or point \
                     `SSL_CERT_FILE` at a PEM file, or give timebox's \
                     `Client::builder().reqwest(..)` a reqwest client with TLS roots of its own",
                    Chain(&*err)
                )
            }))
        });
        let entropy = self.entropy.unwrap_or_else(Entropy::from_os);
        let rules = Rules::new(&self.config, entropy);
        Client {
            transport,
            rules: Arc::new(if self.within_origin {
                rules.within_origin()
            } else {
                rules
            }),
        }
    }
}
