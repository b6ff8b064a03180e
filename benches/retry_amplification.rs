//! The retry-amplification experiment on loopback: how many attempts reach
//! the last service of a chain per client request, with and without the
//! retry budget (DESIGN.md §5, B1–B3).
//!
//! The chain is client → S1 → S2 → S3 → S4 → leaf. Each of the five services
//! is a timebox server (`routes![..].into_router(&config)`) on its own
//! `axum::serve` on `127.0.0.1:0`; each middle layer calls the next with its
//! own `timebox::client::Client::new(&config)` (reqwest, real TCP), and the
//! client at the top is one more such `Client`. The leaf counts every request
//! it gets and always answers 503, which every layer treats as transient and
//! retries. The services are the ones of the sim test
//! (`tests/client.rs`, fn `amplification`), shared from
//! `tests/support/chain.rs`.
//!
//! Two runs:
//!
//! - (a) budget disabled, `max_retries = 2`: 3 attempts a layer, so
//!   3⁵ = 243 leaf attempts per client request;
//! - (b) timebox's defaults: `max_retries = 3` under the per-host retry
//!   budget (capacity 500, transient cost 14, retry ratio 0.1), which lets
//!   about one request in ten retry once its bucket is empty (B3).
//!
//! Each run sends sequential GETs: a warm-up that drains the buckets (the
//! buckets start full, B2), then the measured requests. What is measured is
//! the leaf attempts per client request over the measured requests (the
//! steady state); every request's count, warm-up included, is also plotted
//! as "leaf load per request over time" in `docs/retry_amplification.svg`.
//!
//! The circuit breakers are kept out (`breaker.minimum_sample_count =
//! u32::MAX`, see `tests/support/chain.rs`): against an always-failing leaf
//! they would soon stop the traffic altogether, and the runs are meant to
//! show the budget alone.
//!
//! Real time passes here, so both runs set `http.client.max_backoff_ms = 1`:
//! every backoff wait is at most 1 ms. The experiment counts attempts; the
//! waits would only stretch the time it takes, not change the counts (the
//! leaf sends no `Retry-After` and no deadline is set).
//!
//! Regenerate the table and the plot with:
//!
//! ```text
//! cargo bench -p timebox-benches --bench retry_amplification
//! ```

use std::error::Error;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use http::StatusCode;
use plotters::prelude::*;
use timebox::client::Client;
use timebox::config::Config;
use tokio::net::TcpListener;

#[allow(unreachable_pub)] // shared with the tests, where it is `pub`
#[path = "../tests/support/chain.rs"]
mod chain;

use chain::{leaf_service, middle, with_defaults, without_budget, MIDDLE_LAYERS};

type BoxError = Box<dyn Error>;

/// The backoff cap of both runs, in milliseconds.
const MAX_BACKOFF_MS: u64 = 1;

/// The trailing window of the rolling mean drawn over long runs.
const ROLLING_WINDOW: usize = 50;

/// One configuration of the chain and how many requests it gets.
struct Run {
    name: &'static str,
    label: &'static str,
    attempts_a_layer: &'static str,
    budget: &'static str,
    config: Config,
    warm_up: usize,
    measured: usize,
}

/// What one run saw.
struct Outcome {
    /// Leaf attempts of every client request, in order, warm-up first.
    leaf_hits: Vec<u64>,
    elapsed: Duration,
}

impl Outcome {
    /// The measured requests (after the warm-up).
    fn steady(&self, run: &Run) -> &[u64] {
        &self.leaf_hits[run.warm_up..]
    }

    /// Leaf attempts per client request over the measured requests.
    fn steady_state(&self, run: &Run) -> f64 {
        let steady = self.steady(run);
        steady.iter().sum::<u64>() as f64 / steady.len() as f64
    }
}

fn runs() -> [Run; 2] {
    let mut a = without_budget();
    a.http.client.max_backoff_ms = MAX_BACKOFF_MS;
    let mut b = with_defaults();
    b.http.client.max_backoff_ms = MAX_BACKOFF_MS;
    [
        Run {
            name: "(a)",
            label: "budget disabled, max_retries = 2",
            attempts_a_layer: "3 (max_retries = 2)",
            budget: "disabled",
            config: a,
            warm_up: 3,
            measured: 20,
        },
        Run {
            name: "(b)",
            label: "timebox defaults (retry budget on, max_retries = 3)",
            attempts_a_layer: "up to 4 (max_retries = 3)",
            budget: "defaults (capacity 500, transient cost 14, ratio 0.1)",
            config: b,
            warm_up: 300,
            measured: 1000,
        },
    ]
}

/// Serves `router` on a fresh loopback port until the runtime is dropped.
async fn serve(router: Router) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

/// Starts the chain on its own runtime, sends the run's requests and stops
/// every server (dropping the runtime ends their tasks).
fn execute(run: &Run) -> Result<Outcome, BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async {
        let config = &run.config;
        let hits = Arc::new(AtomicU64::new(0));
        // From the leaf outwards: S4 calls the leaf, S1 is called by the client.
        let leaf = serve(leaf_service(config, hits.clone())).await?;
        let mut next = format!("http://{leaf}/");
        for _ in 0..MIDDLE_LAYERS {
            let addr = serve(middle(config, Client::new(config), next)).await?;
            next = format!("http://{addr}/");
        }
        let entry = next;
        let client = Client::new(config);

        let start = Instant::now();
        let mut leaf_hits = Vec::with_capacity(run.warm_up + run.measured);
        for request in 1..=run.warm_up + run.measured {
            let before = hits.load(Ordering::Relaxed);
            let response = client.get(entry.clone()).send().await?;
            if response.status() != StatusCode::SERVICE_UNAVAILABLE {
                return Err(format!(
                    "{} request {request}: expected 503 from the chain, got {}",
                    run.name,
                    response.status()
                )
                .into());
            }
            leaf_hits.push(hits.load(Ordering::Relaxed) - before);
        }
        Ok::<_, BoxError>(Outcome {
            leaf_hits,
            elapsed: start.elapsed(),
        })
    })?;
    drop(runtime);
    Ok(outcome)
}

/// The trailing mean of `values` over `window` entries (fewer at the start).
fn rolling_mean(values: &[u64], window: usize) -> Vec<f64> {
    (0..values.len())
        .map(|i| {
            let slice = &values[(i + 1).saturating_sub(window)..=i];
            slice.iter().sum::<u64>() as f64 / slice.len() as f64
        })
        .collect()
}

/// One panel per run, stacked, on a shared log-scale y axis.
fn plot(path: &Path, results: &[(Run, Outcome)]) -> Result<(), BoxError> {
    let highest = results
        .iter()
        .flat_map(|(_, outcome)| outcome.leaf_hits.iter().copied())
        .max()
        .unwrap_or(1);
    let (y_low, y_high) = (0.8_f64, highest as f64 * 2.5);

    let root = SVGBackend::new(path, (1000, 800)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "Leaf load per client request: client → S1 → S2 → S3 → S4 → leaf (always 503)",
        ("sans-serif", 20),
    )?;
    let panels = root.split_evenly((results.len(), 1));
    for ((run, outcome), panel) in results.iter().zip(panels.iter()) {
        let total = outcome.leaf_hits.len() as f64;
        let warm_up_end = run.warm_up as f64 + 0.5;
        let mean = outcome.steady_state(run);
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!(
                    "{} {}: {} warm-up + {} measured requests",
                    run.name, run.label, run.warm_up, run.measured
                ),
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5_f64..total + 0.5, (y_low..y_high).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("client request number (warm-up shaded)")
            .y_desc("leaf attempts (log scale)")
            .y_label_formatter(&|y| format!("{y}"))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()?;

        let shade = RGBColor(225, 225, 225);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.5, y_low), (warm_up_end, y_high)],
                shade.filled(),
            )))?
            .label("warm-up (buckets draining)")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], shade.filled()));

        let points: Vec<(f64, f64)> = outcome
            .leaf_hits
            .iter()
            .enumerate()
            .map(|(i, &hits)| ((i + 1) as f64, hits as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(points.iter().copied(), BLUE.mix(0.6)))?
            .label("leaf attempts for that request")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.mix(0.6)));
        if points.len() <= 100 {
            chart.draw_series(
                points
                    .iter()
                    .map(|&point| Circle::new(point, 3, BLUE.filled())),
            )?;
        } else {
            let rolling = rolling_mean(&outcome.leaf_hits, ROLLING_WINDOW);
            chart
                .draw_series(LineSeries::new(
                    rolling
                        .iter()
                        .enumerate()
                        .map(|(i, &mean)| ((i + 1) as f64, mean)),
                    RED.stroke_width(2),
                ))?
                .label(format!("trailing mean of {ROLLING_WINDOW} requests"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(
                [(warm_up_end, mean), (total + 0.5, mean)],
                BLACK.stroke_width(2),
            ))?
            .label(format!("steady state: {mean:.3} leaf attempts per request"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));

        // The legend goes where the steady-state line is not.
        let legend_at = if mean > (y_low * y_high).sqrt() {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        };
        chart
            .configure_series_labels()
            .position(legend_at)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .label_font(("sans-serif", 13))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let layers = MIDDLE_LAYERS + 1;
    println!(
        "retry amplification on loopback: client → S1 → S2 → S3 → S4 → leaf \
         ({layers} retrying layers, the leaf always answers 503; breakers kept out)"
    );
    println!(
        "note: http.client.max_backoff_ms = {MAX_BACKOFF_MS} in both runs, so every \
         backoff wait is ≤ {MAX_BACKOFF_MS} ms; the experiment counts attempts, the \
         waits only stretch time"
    );

    let mut results = Vec::new();
    for run in runs() {
        let outcome = execute(&run)?;
        let steady = outcome.steady(&run);
        println!(
            "{} {}: {} requests in {:.2?}; steady-state leaf attempts per request \
             min {} max {}",
            run.name,
            run.label,
            outcome.leaf_hits.len(),
            outcome.elapsed,
            steady.iter().min().unwrap_or(&0),
            steady.iter().max().unwrap_or(&0),
        );
        results.push((run, outcome));
    }

    println!();
    println!(
        "| run | attempts a layer | budget | warm-up | measured requests | \
         leaf attempts per request (steady state) |"
    );
    println!("|---|---|---|---|---|---|");
    for (run, outcome) in &results {
        println!(
            "| {} {} | {} | {} | {} | {} | {:.3} |",
            run.name,
            run.label,
            run.attempts_a_layer,
            run.budget,
            run.warm_up,
            run.measured,
            outcome.steady_state(run),
        );
    }
    let a = results[0].1.steady_state(&results[0].0);
    let b = results[1].1.steady_state(&results[1].0);
    println!();
    println!(
        "ratio (a) / (b): {:.1}× fewer leaf attempts with the budget",
        a / b
    );
    println!(
        "reference: 3^{layers} = {} without a budget; about 1.1^{layers} ≈ {:.2} \
         with a 10 % retry ratio at each layer (B3)",
        3_u64.pow(u32::try_from(layers)?),
        1.1_f64.powi(i32::try_from(layers)?),
    );

    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    std::fs::create_dir_all(&docs)?;
    let svg = docs.join("retry_amplification.svg");
    plot(&svg, &results)?;
    println!("plot: {}", svg.canonicalize()?.display());
    Ok(())
}
