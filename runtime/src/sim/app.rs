//! [`SimApp`]: an application answering requests in virtual time.

use std::convert::Infallible;
use std::future::poll_fn;

use axum::body::Body;
use axum::Router;
use http::{Request, Response};
use tower_service::Service;

use crate::entropy::Entropy;
use crate::shutdown::{DrainToken, InFlight, Shutdown, ShutdownToken};

/// An axum router served in-process by a simulation: each request goes
/// through the router's whole stack (the timebox layers included), on the
/// simulation's clock, with the simulation's seeded [`Entropy`], so the
/// `Retry-After` values it draws replay for the same seed.
///
/// Made by [`Sim::app`](super::Sim::app). Cheap to clone.
#[derive(Debug, Clone)]
pub struct SimApp {
    router: Router,
    entropy: Entropy,
    shutdown: ShutdownToken,
    drain: DrainToken,
    in_flight: Option<InFlight>,
}

impl SimApp {
    pub(super) fn new(router: Router, entropy: Entropy) -> Self {
        Self {
            router,
            entropy,
            shutdown: ShutdownToken::default(),
            drain: DrainToken::default(),
            in_flight: None,
        }
    }

    /// Attaches `shutdown`'s token and in-flight count to every request, as
    /// [`serve`](crate::server::serve) does, so a simulated shutdown gates
    /// the app and waits for its requests.
    #[must_use]
    pub fn with_shutdown(mut self, shutdown: &Shutdown) -> Self {
        self.shutdown = shutdown.token();
        self.drain = shutdown.drain_token();
        self.in_flight = Some(shutdown.in_flight());
        self
    }

    /// Sends `request` through the app and returns its response.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the request, as a client that went away.
    pub async fn request(&self, mut request: Request<Body>) -> Response<Body> {
        request.extensions_mut().insert(self.entropy.clone());
        request.extensions_mut().insert(self.shutdown.clone());
        request.extensions_mut().insert(self.drain.clone());
        if let Some(in_flight) = &self.in_flight {
            request.extensions_mut().insert(in_flight.clone());
        }
        let mut router = self.router.clone();
        let ready: Result<(), Infallible> =
            poll_fn(|cx| <Router as Service<Request<Body>>>::poll_ready(&mut router, cx)).await;
        let Ok(()) = ready;
        let Ok(response) = router.call(request).await;
        response
    }
}
