#![allow(dead_code)]

use timebox::get;

#[get("users")]
async fn path_without_slash() -> &'static str {
    "users"
}

fn main() {}
