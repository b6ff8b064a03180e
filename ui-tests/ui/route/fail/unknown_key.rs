#![allow(dead_code)]

use timebox::get;

#[get("/users", timout_ms = 5000)]
async fn unknown_key() -> &'static str {
    "users"
}

fn main() {}
