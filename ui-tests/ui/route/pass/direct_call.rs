//! The handler stays a plain `async fn`, callable as written.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use timebox::{get, post};

#[derive(Clone)]
struct App {
    greeting: &'static str,
}

#[get("/health")]
async fn health() -> StatusCode {
    StatusCode::OK
}

#[post("/greet/{name}", timeout_ms = 1000)]
async fn greet(State(app): State<App>, Path(name): Path<String>) -> Json<String> {
    Json(format!("{}, {name}", app.greeting))
}

fn main() {
    let _ = health();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(health().await, StatusCode::OK);
        let app = App { greeting: "hello" };
        let Json(greeting) = greet(State(app), Path("ada".to_owned())).await;
        assert_eq!(greeting, "hello, ada");
    });
}
