#![allow(dead_code)]

use timebox::get;

#[get("/a", min_budget_ms = 1.5)]
async fn fraction() -> &'static str {
    "a"
}

#[get("/b", min_budget_ms = -1)]
async fn negative() -> &'static str {
    "b"
}

#[get("/c", min_budget_ms = "50")]
async fn string() -> &'static str {
    "c"
}

#[get("/d", min_budget_ms = 50u32)]
async fn suffix() -> &'static str {
    "d"
}

#[get("/e", min_budget_ms = 18446744073709551616)]
async fn out_of_range() -> &'static str {
    "e"
}

fn main() {}
