#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 5000u32)]
async fn timeout_ms_with_suffix() -> &'static str {
    "users"
}

fn main() {}
