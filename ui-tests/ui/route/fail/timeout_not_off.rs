#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout = "sometimes")]
async fn timeout_not_off() -> &'static str {
    "users"
}

fn main() {}
