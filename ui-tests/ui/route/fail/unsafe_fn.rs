#![allow(dead_code)]

use timebox::get;

#[get("/users")]
async unsafe fn unsafe_fn() -> &'static str {
    "users"
}

fn main() {}
