#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout = "off", min_budget_ms = 50)]
async fn min_budget_ms_with_timeout_off() -> &'static str {
    "users"
}

fn main() {}
