//! `min_budget_ms` beside an inherited or an own deadline, in either order.

use timebox::config::Config;
use timebox::{get, routes};

#[get("/inherit", min_budget_ms = 50)]
async fn inherit() -> &'static str {
    "inherit"
}

#[get("/override", min_budget_ms = 50, timeout_ms = 1000)]
async fn override_first() -> &'static str {
    "override"
}

#[get("/after", timeout_ms = 1000, min_budget_ms = 999)]
async fn override_after() -> &'static str {
    "after"
}

fn main() {
    let _router: axum::Router = routes![inherit, override_first, override_after].into_router(&Config::default());
}
