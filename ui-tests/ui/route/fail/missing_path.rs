#![allow(dead_code)]

use timebox::get;

#[get]
async fn missing_path() -> &'static str {
    "no path"
}

fn main() {}
