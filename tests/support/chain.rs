//! The retry-amplification chain: client → S1 → S2 → S3 → S4 → leaf, each
//! hop a timebox server calling the next with its own timebox `Client`, the
//! leaf always answering 503.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::Router;
use http::StatusCode;
use timebox::client::Client;
use timebox::config::Config;
use timebox::{get, routes};

/// How many services stand between the client and the leaf.
pub const MIDDLE_LAYERS: usize = 4;

#[derive(Clone)]
struct Next {
    client: Client,
    url: String,
}

#[get("/")]
async fn forward(State(next): State<Next>) -> StatusCode {
    match next.client.get(next.url.clone()).send().await {
        Ok(response) => response.status(),
        Err(_) => StatusCode::BAD_GATEWAY,
    }
}

#[get("/")]
async fn leaf(State(hits): State<Arc<AtomicU64>>) -> StatusCode {
    hits.fetch_add(1, Ordering::Relaxed);
    StatusCode::SERVICE_UNAVAILABLE
}

/// A middle service that forwards every request to `next_url` with `client`.
pub fn middle(config: &Config, client: Client, next_url: String) -> Router {
    routes![forward].into_router(config).with_state(Next {
        client,
        url: next_url,
    })
}

/// The leaf: counts every request in `hits` and answers 503.
pub fn leaf_service(config: &Config, hits: Arc<AtomicU64>) -> Router {
    routes![leaf].into_router(config).with_state(hits)
}

/// (a): no budget, 3 attempts a layer.
pub fn without_budget() -> Config {
    let mut config = isolate_budget();
    config.http.client.retry_budget.enabled = false;
    config.http.client.max_retries = 2;
    config
}

/// (b): timebox's defaults.
pub fn with_defaults() -> Config {
    isolate_budget()
}

/// The breakers would stop the traffic altogether once the leaf keeps
/// failing; they are kept out so the two runs show the budget alone.
fn isolate_budget() -> Config {
    let mut config = Config::default();
    config.breaker.minimum_sample_count = u32::MAX;
    config
}
