#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 1000, min_budget_ms = 0)]
async fn min_budget_ms_zero() -> &'static str {
    "users"
}

#[get("/orders", timeout_ms = 1000, min_budget_ms = 0ms)]
async fn zero_milliseconds() -> &'static str {
    "orders"
}

fn main() {}
