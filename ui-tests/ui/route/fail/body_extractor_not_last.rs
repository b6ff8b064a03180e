use axum::extract::State;
use axum::Json;
use timebox::post;

#[derive(Clone)]
struct App;

#[derive(serde::Deserialize)]
struct Order {}

#[post("/orders")]
async fn create(Json(_order): Json<Order>, State(_app): State<App>) -> &'static str {
    "created"
}

#[post("/notes")]
async fn note(
    _note: Result<Json<Order>, axum::extract::rejection::JsonRejection>,
    _app: State<App>,
) -> &'static str {
    "noted"
}

#[post("/maybe")]
async fn maybe(_order: Option<Json<Order>>, _app: State<App>) -> &'static str {
    "maybe"
}

/// Not reported: a parts extractor whose rejection is a `String`, and an
/// `Option<String>`, which is no extractor in any place (axum says so at
/// `routes!`).
#[post("/text")]
async fn text(_text: Option<String>, _app: State<App>) -> &'static str {
    "text"
}

#[post("/drafts")]
async fn draft(_auth: Result<Auth, String>, _app: State<App>) -> &'static str {
    "drafted"
}

struct Auth;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Auth {
    type Rejection = String;

    async fn from_request_parts(
        _parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self)
    }
}

fn main() {}
