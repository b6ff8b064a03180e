use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use timebox::client::{Client, ClientError};
use timebox::config::Config;
use timebox::deadline::header::DEADLINE_HEADER;
use timebox::deadline::Deadline;

use crate::table::{Row, Section};

#[derive(Clone, Default)]
struct Upstream {
    hits: Arc<AtomicUsize>,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Upstream {
    fn hit(&self, request: &Request) {
        self.hits.fetch_add(1, Ordering::SeqCst);
        let header = request
            .headers()
            .get(&DEADLINE_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(header);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

async fn throttle(State(up): State<Upstream>, request: Request) -> Response {
    up.hit(&request);
    (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "10")]).into_response()
}

async fn unavailable(State(up): State<Upstream>, request: Request) -> StatusCode {
    up.hit(&request);
    StatusCode::SERVICE_UNAVAILABLE
}

async fn failing(State(up): State<Upstream>, request: Request) -> StatusCode {
    up.hit(&request);
    StatusCode::INTERNAL_SERVER_ERROR
}

async fn redirect(State(up): State<Upstream>, request: Request) -> Redirect {
    up.hit(&request);
    tokio::time::sleep(Duration::from_millis(200)).await;
    Redirect::temporary("/target")
}

async fn target(State(up): State<Upstream>, request: Request) -> &'static str {
    up.hit(&request);
    "arrived"
}

pub(crate) async fn section() -> Section {
    Section {
        title: "Client",
        intro: &[
            "Outbound calls retry only what is worth it and only when the wait fits the time",
            "left; a per-host budget keeps retries near a tenth of first attempts, and a breaker",
            "stops calling a host that is down. The upstream here is a real server on loopback.",
        ],
        rows: rows().await,
    }
}

async fn rows() -> Vec<Row> {
    let up = Upstream::default();
    let app = Router::new()
        .route("/throttle", get(throttle))
        .route("/unavailable", get(unavailable))
        .route("/failing", get(failing))
        .route("/redirect", get(redirect))
        .route("/target", get(target))
        .with_state(up.clone());
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(err) => return vec![Row::new("upstream on 127.0.0.1:0", "listening", err)],
    };
    let base = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}"),
        Err(err) => return vec![Row::new("upstream on 127.0.0.1:0", "listening", err)],
    };
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut config = Config::default();
    // Keep the breaker out of the budget row; the breaker row has its own.
    config.breaker.enabled = false;
    let client = Client::new(&config);

    let mut rows = Vec::new();
    let before = up.hits();
    let start = tokio::time::Instant::now();
    let outcome = Deadline::after(Duration::from_secs(1))
        .scope(client.get(format!("{base}/throttle")).send())
        .await;
    let observed = match outcome {
        Ok(response) => format!(
            "{}, {} attempt, {}",
            response.status().as_u16(),
            up.hits() - before,
            if start.elapsed() < Duration::from_millis(500) {
                "at once"
            } else {
                "after a wait"
            }
        ),
        Err(err) => err.to_string(),
    };
    rows.push(Row::new(
        "429 Retry-After 10 s under a 1 s deadline",
        "429, 1 attempt, at once",
        observed,
    ));

    for _ in 0..100 {
        let _ = client.get(format!("{base}/unavailable")).send().await;
    }
    let before = up.hits();
    for _ in 0..500 {
        let _ = client.get(format!("{base}/unavailable")).send().await;
    }
    let share = (up.hits() - before - 500) as f64 / 500.0;
    rows.push(Row::new(
        "retries per request on an always-503 host",
        "0.08..=0.12 (budget)",
        if (0.08..=0.12).contains(&share) {
            "0.08..=0.12 (budget)".to_owned()
        } else {
            format!("{share:.3}")
        },
    ));

    let start_seen = up.seen().len();
    let outcome = Deadline::after(Duration::from_secs(3))
        .scope(client.get(format!("{base}/redirect")).send())
        .await;
    let seen: Vec<u64> = up.seen()[start_seen..]
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    let observed = match (outcome, seen.as_slice()) {
        (Ok(_), [first, second]) if *second + 200 <= *first => {
            "second hop sees 200+ ms less".to_owned()
        }
        (Ok(_), seen) => format!("headers {seen:?}"),
        (Err(err), _) => err.to_string(),
    };
    rows.push(Row::new(
        "header across a redirect after 200 ms",
        "second hop sees 200+ ms less",
        observed,
    ));

    let mut breaker_config = Config::default();
    breaker_config.breaker.minimum_sample_count = 10;
    let client = Client::new(&breaker_config);
    for _ in 0..10 {
        let _ = client
            .get(format!("{base}/failing"))
            .retries(0)
            .send()
            .await;
    }
    let before = up.hits();
    let outcome = client
        .get(format!("{base}/failing"))
        .retries(0)
        .send()
        .await;
    let observed = match outcome {
        Err(ClientError::CircuitBreakerOpen { .. }) if up.hits() == before => {
            "breaker open, not sent".to_owned()
        }
        Err(err) => err.to_string(),
        Ok(response) => response.status().to_string(),
    };
    rows.push(Row::new(
        "11th call after 10 failures",
        "breaker open, not sent",
        observed,
    ));
    server.abort();
    rows
}
