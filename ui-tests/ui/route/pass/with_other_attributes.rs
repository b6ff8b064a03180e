//! Doc comments, `#[allow]`, `#[cfg]` and `#[deprecated]` stay on the handler;
//! a `#[cfg]` also applies to the companion, so two handlers of the same name
//! under opposite `#[cfg]`s do not collide. No warning comes from the expansion.

#![deny(warnings)]

use timebox::config::Config;
use timebox::{get, routes};

/// The version, as a unit test can call it.
#[get("/version", timeout = "off")]
#[allow(clippy::unused_async)]
async fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Compiled out: neither the handler nor its companion exists.
#[get("/mode")]
#[cfg(any())]
async fn mode() -> &'static str {
    "never compiled"
}

/// Compiled in.
#[get("/mode")]
#[cfg(not(any()))]
async fn mode() -> &'static str {
    "compiled"
}

#[cfg(any())]
#[get("/gone")]
async fn gone() -> &'static str {
    "never compiled"
}

/// Deprecated: naming it in `routes!` warns, the expansion itself does not.
#[deprecated = "use `version`"]
#[get("/old-version")]
async fn old_version() -> &'static str {
    "0.0.0"
}

#[allow(deprecated)]
fn old_routes() -> axum::Router {
    routes![old_version].into_router(&Config::default())
}

fn main() {
    let router: axum::Router = routes![version, mode].into_router(&Config::default());
    let _ = router.merge(old_routes());
}
