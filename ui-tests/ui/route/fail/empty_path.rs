#![allow(dead_code)]

use timebox::get;

#[get("")]
async fn empty_path() -> &'static str {
    "root"
}

fn main() {}
