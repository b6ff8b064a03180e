#![allow(dead_code)]

use timebox::get;

const BUDGET: u64 = 50;

#[get("/users", timeout_ms = 1000, min_budget_ms = BUDGET)]
async fn min_budget_ms_not_a_literal() -> &'static str {
    "users"
}

fn main() {}
