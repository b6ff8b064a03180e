#![allow(dead_code)]

use timebox::{get, post};

#[get("/users", timeout_ms)]
async fn no_equals() -> &'static str {
    "users"
}

#[post("/users", min_budget_ms = , timeout = "off")]
async fn no_value() -> &'static str {
    "users"
}

fn main() {}
