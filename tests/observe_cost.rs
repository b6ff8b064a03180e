//! O2: with no observer installed, what the server would tell costs
//! nothing on the request path. A request through `TimeboxLayer` with its
//! deadline check (A1, dark) and its concurrency limit (A2) allocates no more
//! than one with both off: no event, and no route label for one, is built.
//!
//! One test in its own binary: the allocator's counts are the process's.

mod support;

use std::alloc::System;
use std::num::NonZeroUsize;

use axum::routing::get;
use axum::Router;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use timebox::config::{Concurrency, Config, DeadlineCheck};
use timebox::server::TimeboxLayer;

// The workspace forbids `unsafe_code`, and a `GlobalAlloc` impl needs
// `unsafe impl`: stats_alloc's counting wrapper around `System` is used.
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Requests before counting: the route's check is made, and its window
/// holds enough samples to estimate from.
const WARM_UP: usize = 200;
const COUNTED: usize = 100;

async fn item() -> &'static str {
    "item"
}

/// A plain router under `TimeboxLayer` with a global deadline, and the
/// check and the limit on or off; no observer.
fn app(admission: bool) -> Router {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = Some(30_000);
    if admission {
        config.server.admission.deadline_check = DeadlineCheck::Dark;
        config.server.admission.concurrency =
            Concurrency::Fixed(NonZeroUsize::new(100).expect("100 is not 0"));
    } else {
        config.server.admission.deadline_check = DeadlineCheck::Off;
        config.server.admission.concurrency = Concurrency::Off;
    }
    Router::new()
        .route("/items/{id}", get(item))
        .layer(TimeboxLayer::new(&config))
}

/// Allocations of [`COUNTED`] requests through `app`, after the warm-up.
async fn allocations(app: &Router) -> usize {
    support::allocations::of_requests(ALLOC, app, "/items/7", WARM_UP, COUNTED).await
}

#[test]
fn with_no_observer_the_check_and_the_limit_allocate_nothing_per_request() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("the runtime builds");
    let (on, off) = runtime.block_on(async {
        let on = allocations(&app(true)).await;
        let off = allocations(&app(false)).await;
        (on, off)
    });
    assert_eq!(
        on, off,
        "{COUNTED} requests allocated {on} times with the check and the limit, {off} without"
    );
}
