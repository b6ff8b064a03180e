//! A handler declared inside a function body, as tests often do, using types
//! declared in the same body.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use timebox::config::Config;
use timebox::sim::Sim;
use timebox::{get, routes};

fn main() {
    #[derive(Clone)]
    struct Local {
        answer: u32,
    }

    #[get("/answer", timeout_ms = 250)]
    async fn answer(State(local): State<Local>) -> String {
        local.answer.to_string()
    }

    let router: axum::Router = routes![answer]
        .into_router(&Config::default())
        .with_state(Local { answer: 42 });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = Sim::new(0)
            .app(router)
            .request(Request::get("/answer").body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(body, "42");
    });
}
