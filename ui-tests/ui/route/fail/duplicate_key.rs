#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 5000, timeout_ms = 6000)]
async fn duplicate_key() -> &'static str {
    "users"
}

fn main() {}
