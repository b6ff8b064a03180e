#![allow(dead_code)]

use timebox::get;

const SOME_CONST: u64 = 5000;

#[get("/users", timeout_ms = SOME_CONST)]
async fn timeout_ms_not_a_literal() -> &'static str {
    "users"
}

fn main() {}
