//! S9: with no deadline anywhere (no global one, no route override), a
//! route mounted by the macros runs no deadline machinery: a request
//! through it allocates what one through a plain axum handler does, and
//! its handler sees no deadline.
//!
//! One test in its own binary: the allocator's counts are the process's.

mod support;

use std::alloc::System;

use axum::routing::get;
use axum::Router;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use timebox::config::Config;
use timebox::deadline::Deadline;

// The workspace forbids `unsafe_code`, and a `GlobalAlloc` impl needs
// `unsafe impl`: stats_alloc's counting wrapper around `System` is used.
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const WARM_UP: usize = 10;
const COUNTED: usize = 100;

async fn plain() -> &'static str {
    assert!(Deadline::current().is_none());
    "item"
}

#[timebox::get("/items")]
async fn routed() -> &'static str {
    assert!(Deadline::current().is_none(), "no deadline anywhere");
    "item"
}

/// Allocations of [`COUNTED`] requests through `app`, after a warm-up.
async fn allocations(app: &Router) -> usize {
    let requests = support::allocations::Requests {
        path: "/items",
        warm_up: WARM_UP,
        counted: COUNTED,
        counted_headers: &[],
    };
    support::allocations::of_requests(ALLOC, app, &requests).await
}

#[test]
fn a_macro_route_with_no_deadline_anywhere_allocates_what_a_plain_handler_does() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("the runtime builds");
    let (macro_route, plain_route) = runtime.block_on(async {
        let macro_route = timebox::routes![routed].into_router(&Config::default());
        let plain_route = Router::new().route("/items", get(plain));
        (
            allocations(&macro_route).await,
            allocations(&plain_route).await,
        )
    });
    assert_eq!(macro_route, plain_route, "no deadline machinery ran");
}
