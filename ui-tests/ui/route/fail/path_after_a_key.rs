#![allow(dead_code)]

use timebox::get;

#[get(timeout_ms = 5000, "/users")]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
