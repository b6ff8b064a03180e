//! `routes![name]` finds a handler that a `use` brought in, renamed or not.

use timebox::config::Config;
use timebox::routes;

mod api {
    #[timebox::get("/orders")]
    pub async fn list() -> &'static str {
        "[]"
    }

    #[timebox::post("/orders")]
    pub async fn create(body: String) -> String {
        body
    }
}

use api::create as make;
use api::list;

fn main() {
    let _router: axum::Router = routes![list, make].into_router(&Config::default());
}
