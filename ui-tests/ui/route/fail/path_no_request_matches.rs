#![allow(dead_code)]

use timebox::get;

#[get("/search?q={q}")]
async fn search() -> &'static str {
    "found"
}

#[get("/users/<id>")]
async fn user() -> &'static str {
    "user"
}

#[get("/two words")]
async fn spaced() -> &'static str {
    "spaced"
}

fn main() {}
