#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout = 5000)]
async fn timeout_as_number() -> &'static str {
    "users"
}

fn main() {}
