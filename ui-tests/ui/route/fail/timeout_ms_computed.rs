#![allow(dead_code)]

use timebox::get;

#[get("/computed", timeout_ms = 5 * 1000)]
async fn computed() -> &'static str {
    "computed"
}

#[get("/quoted", timeout_ms = "5s")]
async fn quoted() -> &'static str {
    "quoted"
}

fn main() {}
