#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 1000, min_budget_ms = 1000)]
async fn min_budget_ms_not_below_timeout() -> &'static str {
    "users"
}

fn main() {}
