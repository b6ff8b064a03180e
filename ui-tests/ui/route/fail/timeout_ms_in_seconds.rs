#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 5s)]
async fn in_seconds() -> &'static str {
    "users"
}

#[get("/report", timeout_ms = 2min)]
async fn in_minutes() -> &'static str {
    "report"
}

#[get("/export", timeout_ms = 300ms)]
async fn in_milliseconds() -> &'static str {
    "export"
}

#[get("/archive", timeout_ms = 1Hour)]
async fn in_hours() -> &'static str {
    "archive"
}

#[get("/poll", timeout_ms = 1500us)]
async fn in_microseconds() -> &'static str {
    "poll"
}

#[get("/tick", timeout_ms = 2000000ns)]
async fn in_nanoseconds() -> &'static str {
    "tick"
}

#[get("/tock", timeout_ms = 2000us)]
async fn in_whole_microseconds() -> &'static str {
    "tock"
}

#[get("/forever", timeout_ms = 5124095576030432h)]
async fn too_many_hours() -> &'static str {
    "forever"
}

fn main() {}
