#![allow(dead_code)]

use timebox::get;

#[get("/users")]
fn not_async() -> &'static str {
    "users"
}

fn main() {}
