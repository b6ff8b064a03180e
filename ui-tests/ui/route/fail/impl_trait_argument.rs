#![allow(dead_code)]

use axum::extract::FromRequestParts;
use timebox::get;

#[get("/users")]
async fn impl_trait_argument(_parts: impl FromRequestParts<()>) -> &'static str {
    "users"
}

fn main() {}
