//! O2: with no observer installed, what the server would tell costs
//! nothing on the request path. A request through `TimeboxLayer` with its
//! deadline check (A1, dark) and its concurrency limit (A2) allocates no more
//! than one with both off: no event, and no route label for one, is built,
//! also for the requests the check finds too short.
//!
//! One test in its own binary: the allocator's counts are the process's.

mod support;

use std::alloc::System;
use std::num::NonZeroUsize;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use timebox::config::{Concurrency, Config, DeadlineCheck};
use timebox::observe::{Event, Recording, ShedReason};
use timebox::server::TimeboxLayer;
use tokio::time::sleep;

use support::allocations::Requests;

// The workspace forbids `unsafe_code`, and a `GlobalAlloc` impl needs
// `unsafe impl`: stats_alloc's counting wrapper around `System` is used.
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Requests before counting: the route's check is made, and its window
/// of latencies is full (512), so it grows no more.
const WARM_UP: usize = 600;
const COUNTED: usize = 100;

/// The counted requests have 5 ms left, below the 10 ms the route takes
/// in the warm-up: the check finds each too short (and counts it, up to
/// its cap).
const COUNTED_HEADERS: &[(&str, &str)] = &[("x-timebox-deadline-ms", "5")];

/// Takes 10 ms, unless the request says how long it has: then it answers
/// at once.
async fn item(headers: HeaderMap) -> &'static str {
    if !headers.contains_key("x-timebox-deadline-ms") {
        sleep(Duration::from_millis(10)).await;
    }
    "item"
}

/// A plain router under `TimeboxLayer` with a global deadline, and the
/// check and the limit on or off; no observer.
fn app(admission: bool) -> Router {
    app_told(admission, Config::default())
}

fn app_told(admission: bool, mut config: Config) -> Router {
    config.server.timeouts.request_timeout_ms = Some(30_000);
    config.server.timeouts.accept_deadline_header = true;
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

const REQUESTS: Requests<'static> = Requests {
    path: "/items/7",
    warm_up: WARM_UP,
    counted: COUNTED,
    counted_headers: COUNTED_HEADERS,
};

/// Allocations of [`COUNTED`] requests through `app`, after the warm-up.
async fn allocations(app: &Router) -> usize {
    support::allocations::of_requests(ALLOC, app, &REQUESTS).await
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
    // The same requests, told: the check did find them too short.
    let recording = Recording::new();
    let told = app_told(true, Config::default().observed_by(recording.clone()));
    runtime.block_on(support::allocations::of_requests(ALLOC, &told, &REQUESTS));
    let dark = recording
        .events()
        .iter()
        .filter(|event| {
            matches!(
                event,
                Event::RequestShed {
                    reason: ShedReason::DeadlineTooShortDark,
                    ..
                }
            )
        })
        .count();
    assert!(dark > 0, "no request was found too short");
    assert_eq!(
        on, off,
        "{COUNTED} requests allocated {on} times with the check and the limit, {off} without"
    );
}
