//! `routes![module::handler]` finds a handler by its path.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use timebox::config::Config;
use timebox::routes;
use timebox::sim::Sim;

mod api {
    pub(crate) mod users {
        use axum::extract::Path;
        use timebox::{delete, get};

        #[get("/users/{id}", timeout_ms = 2000)]
        pub(crate) async fn show(Path(id): Path<u32>) -> String {
            format!("user {id}")
        }

        #[delete("/users/{id}")]
        pub async fn remove(Path(_id): Path<u32>) -> axum::http::StatusCode {
            axum::http::StatusCode::NO_CONTENT
        }
    }
}

#[timebox::get("/")]
async fn index() -> &'static str {
    "index"
}

fn main() {
    let router: axum::Router =
        routes![api::users::show, api::users::remove, crate::index].into_router(&Config::default());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Sim::new(0).app(router);
        let response = app
            .request(Request::get("/users/7").body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(body, "user 7");

        let response = app
            .request(Request::delete("/users/7").body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);

        let response = app
            .request(Request::get("/").body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
    });
}
