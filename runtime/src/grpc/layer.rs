//! [`GrpcDeadlineLayer`]: the one layer with a server side and a client
//! side.

use std::sync::Arc;

use tower_layer::Layer;

use crate::config::Config;
use crate::entropy::Entropy;
use crate::shutdown::Shutdown;

use super::client::ClientSettings;
use super::server::ServerSettings;
use super::{GrpcClientDeadline, GrpcServerDeadline};

/// A tower layer that puts gRPC calls under timebox's deadline: on the
/// server ([`server`](GrpcDeadlineLayer::server)) or on the client
/// ([`client`](GrpcDeadlineLayer::client)). See the [module docs](super).
#[derive(Debug, Clone)]
pub struct GrpcDeadlineLayer<Side = Inbound> {
    side: Side,
}

/// The server side of [`GrpcDeadlineLayer`]: calls that come in.
#[derive(Debug, Clone)]
pub struct Inbound {
    settings: Arc<ServerSettings>,
}

/// The client side of [`GrpcDeadlineLayer`]: calls that go out.
#[derive(Debug, Clone)]
pub struct Outbound {
    settings: Arc<ClientSettings>,
}

impl GrpcDeadlineLayer {
    /// The server layer for `config`: deadlines from the call's headers and
    /// `[server.grpc]`, no shutdown until [`shutdown`](Self::shutdown), a
    /// random source seeded by the operating system. Give it a config that
    /// passed [`Config::validate`], which rejects method names that no call
    /// could match.
    ///
    /// Make it the first of the server's `.layer(..)` calls. tonic puts a
    /// timer of its own on a call that carries `grpc-timeout`, started as
    /// the layers' `call`s return, and ends the call with `CANCELLED`
    /// ("Timeout expired") if that timer fires first. This layer counts a
    /// `grpc-timeout` from one millisecond before it reads the clock, in its
    /// `call`, so its `DEADLINE_EXCEEDED` comes first, also behind a layer
    /// that puts off calling on by less than that; one that puts it off
    /// longer (an authentication lookup in its future) would leave the
    /// answer to tonic's timer. A wait in `poll_ready` (a concurrency limit)
    /// comes before either clock starts (see [Admission](super#admission)).
    ///
    /// # Examples
    ///
    /// A handler that takes 2 s, called with `grpc-timeout: 300m`:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    /// use http::{Request, Response};
    /// use timebox::config::Config;
    /// use timebox::deadline::Deadline;
    /// use timebox::grpc::GrpcDeadlineLayer;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// #[tokio::main]
    /// # async fn _hidden() {}
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     // The doctest runs this on a paused clock (`start_paused`), where the
    ///     // times below are exact.
    ///     let handler = service_fn(|_: Request<()>| async {
    ///         // The call's deadline is current: outbound calls get what is left.
    ///         assert!(Deadline::current().is_some());
    ///         tokio::time::sleep(Duration::from_secs(2)).await;
    ///         Ok::<_, Infallible>(Response::new(()))
    ///     });
    ///     let service = GrpcDeadlineLayer::server(&Config::default()).layer(handler);
    ///
    ///     let start = tokio::time::Instant::now();
    ///     let call = Request::post("/greet.Greeter/Hello")
    ///         .header("grpc-timeout", "300m")
    ///         .body(())
    ///         .unwrap();
    ///     let response = service.oneshot(call).await.unwrap();
    ///     // Trailers-Only: the status comes in the head, with no body.
    ///     assert_eq!(response.headers()["grpc-status"], "4"); // DEADLINE_EXCEEDED
    ///     // Counted from a millisecond before the call arrived, as above.
    ///     assert_eq!(start.elapsed(), Duration::from_millis(299));
    /// }
    /// ```
    #[must_use]
    pub fn server(config: &Config) -> Self {
        Self {
            side: Inbound {
                settings: Arc::new(ServerSettings::new(config)),
            },
        }
    }

    /// The client layer for `config`.
    #[must_use]
    pub fn client(config: &Config) -> GrpcDeadlineLayer<Outbound> {
        GrpcDeadlineLayer {
            side: Outbound {
                settings: Arc::new(ClientSettings::new(config)),
            },
        }
    }

    /// Counts calls in `shutdown`'s in-flight count and refuses new ones
    /// once its phase 1 begins (see [Shutdown](super#shutdown)).
    #[must_use]
    pub fn shutdown(self, shutdown: &Shutdown) -> Self {
        self.map(|settings| settings.shutdown = Some(shutdown.clone()))
    }

    /// Draws the retry pushback from `entropy` instead of a fresh source.
    #[must_use]
    pub fn entropy(self, entropy: Entropy) -> Self {
        self.map(|settings| settings.entropy = entropy)
    }

    fn map(self, change: impl FnOnce(&mut ServerSettings)) -> Self {
        let mut settings = Arc::unwrap_or_clone(self.side.settings);
        change(&mut settings);
        Self {
            side: Inbound {
                settings: Arc::new(settings),
            },
        }
    }
}

impl<S> Layer<S> for GrpcDeadlineLayer<Inbound> {
    type Service = GrpcServerDeadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcServerDeadline {
            inner,
            settings: Arc::clone(&self.side.settings),
        }
    }
}

impl<S> Layer<S> for GrpcDeadlineLayer<Outbound> {
    type Service = GrpcClientDeadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcClientDeadline::new(inner, Arc::clone(&self.side.settings))
    }
}
