#![allow(dead_code)]

use timebox::get;

#[get("/users", "/people")]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
