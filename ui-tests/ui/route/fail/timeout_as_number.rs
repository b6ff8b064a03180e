#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout = 5000)]
async fn timeout_as_number() -> &'static str {
    "users"
}

#[get("/report", timeout = 5s)]
async fn timeout_in_seconds() -> &'static str {
    "report"
}

#[get("/poll", timeout = 1500us)]
async fn timeout_in_microseconds() -> &'static str {
    "poll"
}

fn main() {}
