//! The leaf: an axum route that says which deadline header it received.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::Router;
use timebox::deadline::header::DEADLINE_HEADER;

/// How long a slow leaf takes.
pub const SLOW: Duration = Duration::from_secs(10);

/// The leaf's state: whether it is slow.
#[derive(Debug, Clone, Default)]
pub struct Leaf {
    slow: Arc<AtomicBool>,
}

impl Leaf {
    /// Makes the leaf take [`SLOW`] per request, or answer at once.
    pub fn set_slow(&self, slow: bool) {
        self.slow.store(slow, Ordering::SeqCst);
    }

    /// `GET /leaf`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/leaf", get(deadline_received))
            .with_state(self.clone())
    }
}

/// Answers with the `x-timebox-deadline-ms` it received (`-1` for none),
/// after [`SLOW`] when the leaf is slow.
async fn deadline_received(State(leaf): State<Leaf>, headers: HeaderMap) -> String {
    if leaf.slow.load(Ordering::SeqCst) {
        tokio::time::sleep(SLOW).await;
    }
    headers
        .get(DEADLINE_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("-1")
        .to_owned()
}
