#![allow(dead_code)]

//! The rules between keys hold whichever key comes first.

use timebox::get;

#[get("/a", timeout = "off", timeout_ms = 5000)]
async fn off_then_millis() -> &'static str {
    "a"
}

#[get("/b", min_budget_ms = 1000, timeout_ms = 1000)]
async fn budget_then_same_timeout() -> &'static str {
    "b"
}

#[get("/c", min_budget_ms = 50, timeout = "off")]
async fn budget_then_off() -> &'static str {
    "c"
}

fn main() {}
