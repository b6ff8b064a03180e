#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 0)]
async fn timeout_ms_zero() -> &'static str {
    "users"
}

#[get("/never", timeout_ms = 0s)]
async fn zero_seconds() -> &'static str {
    "never"
}

fn main() {}
