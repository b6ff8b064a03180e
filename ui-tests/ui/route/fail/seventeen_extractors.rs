#![allow(dead_code)]

use axum::http::{HeaderMap, Method, Uri};
use timebox::get;

#[get("/many")]
async fn many(
    _: Method,
    _: Uri,
    _: HeaderMap,
    _: Method,
    _: Uri,
    _: HeaderMap,
    _: Method,
    _: Uri,
    _: HeaderMap,
    _: Method,
    _: Uri,
    _: HeaderMap,
    _: Method,
    _: Uri,
    _: HeaderMap,
    _: Method,
    _: Uri,
) -> &'static str {
    "too many"
}

fn main() {}
