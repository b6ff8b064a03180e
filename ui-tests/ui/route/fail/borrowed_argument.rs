#![allow(dead_code)]

use std::borrow::Cow;

use axum::http::HeaderMap;
use timebox::get;

#[get("/headers")]
async fn by_reference(headers: &HeaderMap) -> String {
    format!("{}", headers.len())
}

#[get("/name")]
async fn by_lifetime(name: Option<Cow<'_, str>>) -> String {
    name.unwrap_or_default().into_owned()
}

fn main() {}
