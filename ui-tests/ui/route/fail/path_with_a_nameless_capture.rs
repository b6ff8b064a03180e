#![allow(dead_code)]

use timebox::get;

#[get("/files/*")]
async fn files() -> &'static str {
    "[]"
}

#[get("/:/:")]
async fn pairs() -> &'static str {
    "[]"
}

fn main() {}
