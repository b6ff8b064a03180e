//! Admission and hedging: a request that cannot finish in time is refused
//! before it starts, a server over its concurrency limit sheds what waited
//! too long, and a slow first attempt gets a hedge.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use http::{Request, StatusCode};
use timebox::client::ClientLayer;
use timebox::config::{Concurrency, Config, DeadlineCheck};
use timebox::observe::{Event, Recording};
use timebox::server::TimeboxLayer;
use timebox::{get, routes};
use tokio::time::{sleep, Instant};
use tower::{Layer, ServiceExt};

use crate::table::{Row, Section};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A summary needs at least 50 ms, as its attribute says.
#[get("/summary", timeout_ms = 2000, min_budget_ms = 50)]
async fn summary() -> &'static str {
    sleep(MS(40)).await;
    "a summary"
}

#[get("/slow", timeout = "off")]
async fn slow() -> &'static str {
    sleep(MS(1000)).await;
    "slow"
}

pub(crate) async fn section() -> Section {
    let enforced = too_short(Some(DeadlineCheck::Enforce)).await;
    let rows = vec![
        Row::new(
            "10 ms left, route needs 50 ms, check enforced",
            "504 at 0 s, x-timebox-shed: deadline_too_short",
            enforced.said,
        ),
        Row::new(
            "the refusal's body",
            "problem+json, type urn:timebox:deadline-too-short",
            enforced.body,
        ),
        Row::new(
            "the same with the default check (dark): admitted, cut at its 10 ms",
            "503 at 0.01 s, told deadline_too_short_dark",
            too_short(None).await.said,
        ),
        Row::new(
            "concurrency fixed:1, the slot held 1 s",
            "503 at 0.1 s, x-timebox-shed: overloaded",
            over_the_limit().await.said,
        ),
        Row::new(
            "first attempt takes 1 s, hedge after 20 ms",
            "200 at 0.03 s, 2 requests, the second 2;hedge",
            hedged().await,
        ),
    ];
    Section {
        title: "Admission and hedging",
        intro: &[
            "Work that cannot finish in time never starts: a request with less time left than",
            "its route needs is refused before extraction (or, in dark mode, only counted). Over",
            "the concurrency limit a request waits, and CoDel sheds it once the queue stands.",
            "A slow first attempt of an idempotent call gets a second one; the first answer wins.",
        ],
        rows,
    }
}

/// Five requests to `/summary`, the last with 10 ms left, with the check
/// in `check`'s mode (`None`: the default's); what the last got, and the
/// shed it was told as.
async fn too_short(check: Option<DeadlineCheck>) -> Asked {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.accept_deadline_header = true;
    if let Some(check) = check {
        config.server.admission.deadline_check = check;
    }
    let check = config.server.admission.deadline_check;
    let app = routes![summary].into_router(&config);
    // At most a fifth of a route's requests are refused: four pass first.
    for _ in 0..4 {
        let _ = ask(&app, Request::get("/summary")).await;
    }
    let observed = ask(
        &app,
        Request::get("/summary").header("x-timebox-deadline-ms", "10"),
    )
    .await;
    let told = recording.events().iter().find_map(|event| match event {
        Event::RequestShed { reason, .. } => Some(reason.as_str()),
        _ => None,
    });
    match (check, told) {
        (DeadlineCheck::Dark, Some(reason)) => Asked {
            said: format!("{}, told {reason}", observed.said),
            ..observed
        },
        _ => observed,
    }
}

/// A request while the only slot is held for 1 s.
async fn over_the_limit() -> Asked {
    let mut config = Config::default();
    config.server.admission.concurrency = Concurrency::Fixed(NonZeroUsize::MIN);
    let app = routes![slow, summary]
        .into_router(&config)
        .layer(TimeboxLayer::new(&config));
    let holder = {
        let app = app.clone();
        tokio::spawn(async move { ask(&app, Request::get("/slow")).await })
    };
    tokio::task::yield_now().await;
    let observed = ask(&app, Request::get("/summary")).await;
    holder.abort();
    observed
}

/// What a request got.
struct Asked {
    /// Its status, when it came, and the shed header if any.
    said: String,
    /// The `type` of its problem+json body, or what the body was instead.
    body: String,
}

async fn ask(app: &Router, request: http::request::Builder) -> Asked {
    let Ok(request) = request.body(Body::empty()) else {
        let said = "the request does not build".to_owned();
        return Asked {
            body: said.clone(),
            said,
        };
    };
    let start = Instant::now();
    let Ok(response) = app.clone().oneshot(request).await;
    let at = start.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    let said = match response.headers().get("x-timebox-shed") {
        Some(shed) => format!(
            "{status} at {at} s, x-timebox-shed: {}",
            shed.to_str().unwrap_or("?")
        ),
        None => format!("{status} at {at} s"),
    };
    Asked {
        said,
        body: problem_type(response).await,
    }
}

/// The `type` of a problem+json body (RFC 9457), or what the body was
/// instead.
async fn problem_type(response: http::Response<Body>) -> String {
    let problem = response
        .headers()
        .get("content-type")
        .is_some_and(|kind| kind == "application/problem+json");
    if !problem {
        return "no problem+json body".to_owned();
    }
    let Ok(body) = axum::body::to_bytes(response.into_body(), 64 * 1024).await else {
        return "a body that does not read".to_owned();
    };
    let kind = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|problem| problem.get("type")?.as_str().map(str::to_owned));
    match kind {
        Some(kind) => format!("problem+json, type {kind}"),
        None => "problem+json with no type".to_owned(),
    }
}

/// A GET through `ClientLayer` to a service whose first answer takes 1 s
/// and every later one 10 ms, with hedging after 20 ms.
async fn hedged() -> String {
    let mut config = Config::default();
    config.http.client.hedge.enabled = true;
    config.http.client.hedge.delay_ms = Some(20);
    // A new client has hedged nothing yet: with the default 5 % share, its
    // first request may not be hedged. Here it may.
    config.http.client.hedge.max_extra_load = 1.0;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let upstream = {
        let seen = Arc::clone(&seen);
        tower::service_fn(move |request: Request<String>| {
            let seen = Arc::clone(&seen);
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                let marker = request.headers().get("x-timebox-attempt").cloned();
                if let Ok(mut seen) = seen.lock() {
                    seen.push(marker);
                }
                sleep(if first { MS(1000) } else { MS(10) }).await;
                Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
            }
        })
    };
    let client = ClientLayer::new(&config).layer(upstream);
    let Ok(request) = Request::get("http://search.internal/").body(String::new()) else {
        return "the request does not build".to_owned();
    };
    let start = Instant::now();
    let status = match client.oneshot(request).await {
        Ok(response) => response.status(),
        Err(err) => return format!("failed: {err}"),
    };
    let at = start.elapsed().as_secs_f64();
    let seen = seen.lock().map(|seen| seen.clone()).unwrap_or_default();
    match seen.as_slice() {
        [None, Some(marker)] if status == StatusCode::OK => format!(
            "{} at {at} s, 2 requests, the second {}",
            status.as_u16(),
            marker.to_str().unwrap_or("?")
        ),
        other => format!("{} at {at} s, requests {other:?}", status.as_u16()),
    }
}
