#![allow(dead_code)]

//! Captures that axum's router refuses when the route is mounted are
//! refused when the route is written.

use timebox::get;

#[get("/reports/{id}.csv")]
async fn text_after_a_capture() -> &'static str {
    "[]"
}

#[get("/files/{*path}/raw")]
async fn a_catch_all_before_the_end() -> &'static str {
    "[]"
}

#[get("/users/{id")]
async fn an_unclosed_capture() -> &'static str {
    "[]"
}

#[get("/a/{}")]
async fn a_capture_with_no_name() -> &'static str {
    "[]"
}

#[get("/a/b}")]
async fn a_stray_closing_brace() -> &'static str {
    "[]"
}

fn main() {}
