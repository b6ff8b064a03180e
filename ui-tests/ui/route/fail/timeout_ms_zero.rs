#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 0)]
async fn timeout_ms_zero() -> &'static str {
    "users"
}

fn main() {}
