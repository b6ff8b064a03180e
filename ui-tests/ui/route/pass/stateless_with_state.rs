//! A stateless handler mounts on any state, next to a `State` handler.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse;
use timebox::config::Config;
use timebox::sim::Sim;
use timebox::{get, routes};

#[derive(Clone)]
struct AppState {
    users: Vec<&'static str>,
}

#[get("/health", timeout_ms = 100)]
async fn health() -> impl IntoResponse {
    (StatusCode::OK, "ok")
}

#[timebox::get("/users")]
async fn users(axum::extract::State(state): axum::extract::State<AppState>) -> String {
    state.users.join(",")
}

fn main() {
    let routes: axum::Router<AppState> = routes![health, users].into_router(&Config::default());
    let router: axum::Router = routes.with_state(AppState {
        users: vec!["ada", "grace"],
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Sim::new(0).app(router);
        for (path, expected) in [("/health", "ok"), ("/users", "ada,grace")] {
            let response = app
                .request(Request::get(path).body(Body::empty()).unwrap())
                .await;
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let body = axum::body::to_bytes(response.into_body(), 1024)
                .await
                .unwrap();
            assert_eq!(body, expected, "{path}");
        }
    });
}
