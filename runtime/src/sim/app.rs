//! [`SimApp`]: an application answering requests in virtual time.

use std::convert::Infallible;
use std::future::poll_fn;

use axum::body::Body;
use axum::Router;
use http::{Request, Response};
use tower_service::Service;

use crate::deadline::unscoped;
use crate::entropy::Entropy;
use crate::problem;
use crate::server::ShutdownGate;
use crate::shutdown::Shutdown;

/// An axum router served in-process by a simulation: each request goes
/// through the router's whole stack (the timebox layers included), on the
/// simulation's clock, with the simulation's seeded [`Entropy`], so the
/// `Retry-After` values it draws replay for the same seed: those of the
/// answers a handler's error makes itself (an open breaker's, a cut pool
/// wait's) too.
///
/// Made by [`Sim::app`](super::Sim::app). Cheap to clone.
#[derive(Debug, Clone)]
pub struct SimApp {
    router: Router,
    entropy: Entropy,
    shutdown: Option<Shutdown>,
}

impl SimApp {
    pub(super) fn new(router: Router, entropy: Entropy) -> Self {
        Self {
            router,
            entropy,
            shutdown: None,
        }
    }

    /// Puts the app behind `shutdown`'s [`ShutdownGate`], as
    /// [`serve`](crate::server::serve) does, so a simulated shutdown gates
    /// the app and waits for its requests.
    #[must_use]
    pub fn with_shutdown(mut self, shutdown: &Shutdown) -> Self {
        self.shutdown = Some(shutdown.clone());
        self
    }

    /// Sends `request` through the app and returns its response.
    ///
    /// The app runs as a server would, apart from its caller: awaited
    /// inside a [`Deadline::scope`](crate::deadline::Deadline::scope), its
    /// routes, and the response's body when it is read, see no deadline of
    /// the caller's (a caller bounds its own wait with
    /// [`bounded`](crate::deadline::bounded()) or a timeout around the call).
    /// A deadline reaches the app as it reaches a server: in a header of
    /// `server.timeouts.deadline_headers`, when
    /// `server.timeouts.accept_deadline_header` is on (it is off by
    /// default).
    ///
    /// # Examples
    ///
    /// A route with a 2 s deadline behind
    /// [`TimeboxLayer`](crate::server::TimeboxLayer), which accepts the
    /// deadline header, asked with 300 ms to answer by a caller whose own
    /// deadline is 100 ms away:
    ///
    /// ```
    /// use std::time::Duration;
    /// use axum::{body::Body, http::Request, routing::get, Router};
    /// use timebox::config::Config;
    /// use timebox::deadline::Deadline;
    /// use timebox::server::TimeboxLayer;
    /// use timebox::sim::Sim;
    /// use tokio::time::Instant;
    ///
    /// #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// async fn main() {
    ///     let mut config = Config::default();
    ///     config.server.timeouts.request_timeout_ms = Some(2_000);
    ///     config.server.timeouts.accept_deadline_header = true;
    ///     let slow = get(|| async {
    ///         tokio::time::sleep(Duration::from_secs(5)).await;
    ///         "late"
    ///     });
    ///     let router = Router::new()
    ///         .route("/report", slow)
    ///         .layer(TimeboxLayer::new(&config));
    ///     let app = Sim::new(7).app(router);
    ///
    ///     let start = Instant::now();
    ///     let request = Request::get("/report")
    ///         .header("x-timebox-deadline-ms", "300")
    ///         .body(Body::empty())
    ///         .unwrap();
    ///     let answer = app.request(request);
    ///     let response = Deadline::after(Duration::from_millis(100)).scope(answer).await;
    ///     // The header shortened the route's 2 s; the caller's 100 ms did
    ///     // not reach the app (nor bound the wait: a scope does not).
    ///     assert_eq!(response.status(), 503);
    ///     assert_eq!(start.elapsed(), Duration::from_millis(300));
    /// }
    /// ```
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the request, as a client that went away.
    pub async fn request(&self, mut request: Request<Body>) -> Response<Body> {
        request.extensions_mut().insert(self.entropy.clone());
        let answer = async {
            match &self.shutdown {
                Some(shutdown) => {
                    call(ShutdownGate::new(self.router.clone(), shutdown), request).await
                }
                None => call(self.router.clone(), request).await,
            }
        };
        let mut response = unscoped(answer).await;
        // An error's own answer (an open breaker's, a cut pool wait's) is
        // made without the request and its source: drawn again from ours.
        problem::redraw_retry_after(&mut response, &self.entropy);
        response.map(|body| Body::new(unscoped(body)))
    }
}

async fn call<S>(mut service: S, request: Request<Body>) -> Response<Body>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let Ok(()) = poll_fn(|cx| service.poll_ready(cx)).await;
    let Ok(response) = service.call(request).await;
    response
}
