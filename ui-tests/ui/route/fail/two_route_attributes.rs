#![allow(dead_code)]

use timebox::{get, post};

#[get("/users")]
#[post("/users")]
async fn two_route_attributes() -> &'static str {
    "users"
}

fn main() {}
