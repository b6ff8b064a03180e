#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 5000, timeout = "off")]
async fn timeout_ms_and_timeout() -> &'static str {
    "users"
}

fn main() {}
