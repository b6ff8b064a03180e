//! A handler with a `State<T>` extractor mounts on `Router<T>`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use timebox::config::Config;
use timebox::sim::Sim;
use timebox::{get, post, routes};

#[derive(Clone)]
struct App {
    greeting: &'static str,
}

#[derive(Deserialize, Serialize)]
struct Note {
    text: String,
}

#[get("/hello")]
async fn hello(State(app): State<App>) -> String {
    app.greeting.to_owned()
}

#[post("/notes", timeout_ms = 5000)]
async fn create(State(app): State<App>, Json(note): Json<Note>) -> Json<Note> {
    Json(Note {
        text: format!("{}, {}", app.greeting, note.text),
    })
}

fn main() {
    let routes: axum::Router<App> = routes![hello, create].into_router(&Config::default());
    let router: axum::Router = routes.with_state(App { greeting: "hello" });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Sim::new(0).app(router);

        let response = app
            .request(Request::get("/hello").body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(body, "hello");

        let request = Request::post("/notes")
            .header("content-type", "application/json")
            .body(Body::from(r#"{"text":"world"}"#))
            .unwrap();
        let response = app.request(request).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(body, r#"{"text":"hello, world"}"#);
    });
}
