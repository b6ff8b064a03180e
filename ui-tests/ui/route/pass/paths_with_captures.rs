//! Every capture axum's router takes is taken: the routes mount, and each
//! answers its path.

use axum::extract::Path;
use timebox::config::Config;
use timebox::{get, routes};

#[get("/users/{id}/posts/{post_id}")]
async fn post(Path((id, post_id)): Path<(u32, u32)>) -> String {
    format!("{id}/{post_id}")
}

#[get("/v1/file-{name}")]
async fn prefixed(Path(name): Path<String>) -> String {
    name
}

#[get("/files/{*rest}")]
async fn files(Path(rest): Path<String>) -> String {
    rest
}

#[get("/literal/{{braces}}")]
async fn braces() -> &'static str {
    "braces"
}

fn main() {
    // Mounting is what panics for a path the router refuses.
    let _router: axum::Router =
        routes![post, prefixed, files, braces].into_router(&Config::default());
}
