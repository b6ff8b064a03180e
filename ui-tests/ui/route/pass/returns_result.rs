//! A handler returning `Result<_, MyError>`: a deadline error anywhere in the
//! error's `source()` chain answers 504, other errors keep their own response.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Path;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use timebox::config::Config;
use timebox::deadline::{bounded, Deadline, DeadlineExceeded};
use timebox::sim::Sim;
use timebox::{get, routes};

#[derive(Debug)]
enum MyError {
    NotFound,
    Upstream(DeadlineExceeded),
}

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MyError::NotFound => f.write_str("not found"),
            MyError::Upstream(_) => f.write_str("the upstream call failed"),
        }
    }
}

impl std::error::Error for MyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MyError::NotFound => None,
            MyError::Upstream(err) => Some(err),
        }
    }
}

impl IntoResponse for MyError {
    fn into_response(self) -> Response {
        match self {
            MyError::NotFound => StatusCode::NOT_FOUND.into_response(),
            MyError::Upstream(_) => StatusCode::BAD_GATEWAY.into_response(),
        }
    }
}

#[get("/items/{id}")]
async fn item(Path(id): Path<u32>) -> Result<Json<u32>, MyError> {
    match id {
        0 => Err(MyError::NotFound),
        1 => {
            let expired = Deadline::after(Duration::ZERO);
            expired
                .scope(bounded(async { 1 }))
                .await
                .map(Json)
                .map_err(MyError::Upstream)
        }
        id => Ok(Json(id)),
    }
}

/// An error type that is a response but not an `Error`: left to its own
/// `IntoResponse`.
#[get("/teapot")]
async fn teapot() -> Result<&'static str, (StatusCode, &'static str)> {
    Err((StatusCode::IM_A_TEAPOT, "short and stout"))
}

fn main() {
    let router: axum::Router = routes![item, teapot].into_router(&Config::default());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Sim::new(0).app(router);
        for (path, status) in [
            ("/items/0", StatusCode::NOT_FOUND),
            ("/items/1", StatusCode::GATEWAY_TIMEOUT),
            ("/items/2", StatusCode::OK),
            ("/teapot", StatusCode::IM_A_TEAPOT),
        ] {
            let response = app
                .request(Request::get(path).body(Body::empty()).unwrap())
                .await;
            assert_eq!(response.status(), status, "{path}");
        }
    });
}
