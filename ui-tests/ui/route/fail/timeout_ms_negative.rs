#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = -1)]
async fn timeout_ms_negative() -> &'static str {
    "users"
}

fn main() {}
