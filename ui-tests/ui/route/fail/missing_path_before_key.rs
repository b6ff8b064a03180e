#![allow(dead_code)]

use timebox::get;

#[get(timeout_ms = 5)]
async fn missing_path_before_key() -> &'static str {
    "no path"
}

fn main() {}
