#![allow(dead_code)]

use timebox::get;

#[get("/users/:id/files/*rest")]
async fn path_with_axum_0_7_captures() -> &'static str {
    "file"
}

fn main() {}
