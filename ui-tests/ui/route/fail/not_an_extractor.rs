#![allow(dead_code)]

use timebox::get;

struct Users;

#[get("/users")]
async fn not_an_extractor(_users: Users) -> &'static str {
    "users"
}

fn main() {
    let _app: axum::Router = timebox::routes![not_an_extractor]
        .into_router(&timebox::config::Config::default());
}
