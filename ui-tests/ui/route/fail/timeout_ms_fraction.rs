#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 1.5)]
async fn timeout_ms_fraction() -> &'static str {
    "users"
}

fn main() {}
