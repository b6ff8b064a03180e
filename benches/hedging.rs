//! The tail experiment, in virtual time: one slow host's tail with and
//! without hedging (A3), what the hedges cost, and that they stop by
//! themselves when the host fails outright.
//!
//! The host (a `timebox::sim::SimNet` host) answers in 9–11 ms, except 2 %
//! of calls, which take 1 s. A client sends 20 000 GETs to it, 200 a
//! second (Poisson, one seeded source), each with a 2 s deadline and no
//! retries, once without hedging and once with `http.client.hedge` on at
//! its defaults (the delay is the host's p95, the median must fit the
//! time left, 5 tokens a hedge from a bucket at least half full, at most
//! 5 % of requests). Reported: p50, p99 and p99.9 latency, and the extra
//! load (requests the host saw per call, minus one).
//!
//! A third run turns the host bad halfway: from then on every call answers
//! 503 after 1 s, so every call is slow, and each may be hedged. What
//! stops the hedges: the host's share of hedged requests (5 % of its
//! requests in 10 s) is used up, and from the first failing answers on
//! the retries (`max_retries = 3`, the defaults) drain the host's retry
//! bucket, and with it under half full no hedge goes either. The hedges a
//! second are drawn in `docs/hedging.svg`. The failing answers also
//! lengthen the host's p95, the delay before a hedge; a fourth run fails
//! the same way with the delay fixed at 15 ms (`delay_ms`), and a fifth
//! also lifts the cap on the share (`max_extra_load = 1.0`), to show what
//! the budget does alone. Each counts the hedges refused by reason (the
//! client's `no hedge` debug lines). The runs without a failing host make
//! no retries (`max_retries = 0`).
//!
//! Run it (prints the table and rewrites `docs/hedging.svg`):
//!
//! ```text
//! cargo bench -p timebox-benches --bench hedging
//! ```

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use plotters::prelude::*;
use timebox::config::Config;
use timebox::deadline::Deadline;
use timebox::entropy::Entropy;
use timebox::sim::Sim;
use tokio::time::{sleep, sleep_until, Instant};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[path = "support/virtual_load.rs"]
mod virtual_load;

use virtual_load::{paused_runtime, poisson_gap, quantile};

type BoxError = Box<dyn Error>;

const CALLS: usize = 20_000;
const RATE: f64 = 200.0;
const SLOW: Duration = Duration::from_secs(1);
const SLOW_SHARE: f64 = 0.02;
const DEADLINE: Duration = Duration::from_secs(2);
const SEED: u64 = 11;
/// The hedge delay of the failing runs that do not wait for the host's
/// p95 to grow: the healthy host's p95 is about 11 ms.
const FIXED_DELAY_MS: u64 = 15;

/// What the host does, and what it counts.
#[derive(Clone)]
struct Host {
    entropy: Entropy,
    requests: Arc<AtomicU64>,
    hedges: Arc<Mutex<Vec<Duration>>>,
    failing: Arc<AtomicBool>,
    start: Instant,
}

type Mutex<T> = std::sync::Mutex<T>;

impl Host {
    fn new() -> Self {
        Self {
            entropy: Entropy::seeded(SEED + 1),
            requests: Arc::default(),
            hedges: Arc::default(),
            failing: Arc::default(),
            start: Instant::now(),
        }
    }

    fn router(&self) -> Router {
        let host = self.clone();
        Router::new().route(
            "/",
            get(move |request: Request| {
                let host = host.clone();
                async move {
                    host.requests.fetch_add(1, Ordering::Relaxed);
                    if request.headers().contains_key("x-timebox-attempt") {
                        if let Ok(mut hedges) = host.hedges.lock() {
                            hedges.push(host.start.elapsed());
                        }
                    }
                    if host.failing.load(Ordering::Relaxed) {
                        sleep(SLOW).await;
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let latency = if host.entropy.chance(SLOW_SHARE) {
                        SLOW
                    } else {
                        Duration::from_millis(host.entropy.uniform(9..=11))
                    };
                    sleep(latency).await;
                    StatusCode::OK
                }
            }),
        )
    }
}

struct Outcome {
    latencies: Vec<Duration>,
    host_requests: u64,
    /// When each hedge reached the host, from the run's start.
    hedges: Vec<Duration>,
    /// When the host began to fail, from the run's start.
    failing_from: Option<Duration>,
    /// The hedges the client refused, by reason.
    refused: BTreeMap<String, u64>,
}

/// Counts the client's `no hedge: <reason>` debug lines by reason.
#[derive(Clone, Default)]
struct Refusals(Arc<Mutex<BTreeMap<String, u64>>>);

impl<S: tracing::Subscriber> Layer<S> for Refusals {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        metadata.target().starts_with("timebox::client")
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut message = Message::default();
        event.record(&mut message);
        if let Some(reason) = message.0.strip_prefix("no hedge: ") {
            if let Ok(mut refused) = self.0.lock() {
                *refused.entry(reason.to_owned()).or_default() += 1;
            }
        }
    }
}

/// The `message` field of one line.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Outcome {
    /// The hedges that reached the host once it failed, and when the last
    /// of them did, from the failure on.
    fn hedges_after_failing(&self) -> Option<(usize, Duration)> {
        let from = self.failing_from?;
        let after: Vec<Duration> = self
            .hedges
            .iter()
            .filter(|&&at| at >= from)
            .map(|&at| at - from)
            .collect();
        Some((after.len(), after.last().copied().unwrap_or_default()))
    }

    /// A quantile of the calls' latencies: every call ends, so there is
    /// one (`run` refuses an outcome with no call).
    fn quantile(&self, q: f64) -> Duration {
        quantile(&self.latencies, q).expect("an outcome holds every call's latency")
    }

    fn extra_load(&self) -> f64 {
        self.host_requests as f64 / CALLS as f64 - 1.0
    }
}

/// One run's client, and when its host turns bad.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    hedge: bool,
    max_retries: u64,
    /// The call from which every call fails.
    fail_at: Option<usize>,
    /// A fixed hedge delay instead of the host's p95 (`FIXED_DELAY_MS`).
    delay_ms: Option<u64>,
    /// The share of a host's requests that may be hedged, instead of the
    /// default 5 %.
    max_extra_load: Option<f64>,
}

/// Sends the calls of `run`: with `fail_at`, the host answers 503 after
/// 1 s from that call on; with `delay_ms`, a hedge waits that long, not
/// the host's p95.
fn execute(run: Run) -> Result<Outcome, BoxError> {
    let Run {
        hedge,
        max_retries,
        fail_at,
        delay_ms,
        max_extra_load,
    } = run;
    let runtime = paused_runtime()?;
    let refusals = Refusals::default();
    let _logs =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(refusals.clone()));
    runtime.block_on(async {
        let sim = Sim::new(SEED);
        let host = Host::new();
        sim.net().host("up", host.router());
        let mut config = Config::default();
        config.http.client.max_retries = max_retries;
        config.http.client.hedge.enabled = hedge;
        config.http.client.hedge.delay_ms = delay_ms;
        if let Some(share) = max_extra_load {
            config.http.client.hedge.max_extra_load = share;
        }
        config.breaker.enabled = false;
        let client = sim.client_with(&config);
        let arrivals = Entropy::seeded(SEED);
        let mut next = Instant::now();
        let mut tasks = Vec::with_capacity(CALLS);
        let mut failing_from = None;
        for call in 0..CALLS {
            if fail_at == Some(call) {
                host.failing.store(true, Ordering::Relaxed);
                failing_from = Some(host.start.elapsed());
            }
            sleep_until(next).await;
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let sent = Instant::now();
                let _ = Deadline::after(DEADLINE)
                    .scope(client.get("http://up/").send())
                    .await;
                sent.elapsed()
            }));
            next += poisson_gap(&arrivals, RATE);
        }
        let mut latencies = Vec::with_capacity(CALLS);
        for task in tasks {
            latencies.push(task.await?);
        }
        if latencies.is_empty() {
            return Err("no call was made".into());
        }
        let hedges = host
            .hedges
            .lock()
            .map_err(|_| "a host task panicked while recording a hedge")?
            .clone();
        let refused = refusals
            .0
            .lock()
            .map_err(|_| "a task panicked while counting a refusal")?
            .clone();
        Ok(Outcome {
            latencies,
            host_requests: host.requests.load(Ordering::Relaxed),
            hedges,
            failing_from,
            refused,
        })
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn plot(
    path: &std::path::Path,
    plain: &Outcome,
    hedged: &Outcome,
    failing: &Outcome,
    fail_second: f64,
) -> Result<(), BoxError> {
    let root = SVGBackend::new(path, (1000, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "Hedging: a host at 9–11 ms with 2 % of calls at 1 s, 200 calls a second",
        ("sans-serif", 18),
    )?;
    let (left, right) = root.split_horizontally(500);
    let quantiles = [0.5, 0.9, 0.95, 0.99, 0.995, 0.999];
    let mut tail = ChartBuilder::on(&left)
        .caption("latency by quantile (log)", ("sans-serif", 14))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0_f64..5.5, (5.0_f64..2000.0).log_scale())?;
    tail.configure_mesh()
        .x_labels(6)
        .x_label_formatter(&|x| {
            quantiles
                .get(x.round() as usize)
                .map_or(String::new(), |q| format!("p{}", q * 100.0))
        })
        .y_desc("ms")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (outcome, label, color) in [
        (plain, "no hedging", RGBColor(150, 150, 150)),
        (hedged, "hedging (defaults)", RGBColor(30, 90, 200)),
    ] {
        let points: Vec<(f64, f64)> = quantiles
            .iter()
            .enumerate()
            .map(|(i, &q)| (i as f64, ms(outcome.quantile(q))))
            .collect();
        tail.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        tail.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    tail.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;

    let seconds = (CALLS as f64 / RATE).ceil() as usize + 3;
    let mut per_second = vec![0_u32; seconds];
    for at in &failing.hedges {
        if let Some(slot) = per_second.get_mut(at.as_secs() as usize) {
            *slot += 1;
        }
    }
    let highest = per_second.iter().copied().max().unwrap_or(1).max(1);
    let mut load = ChartBuilder::on(&right)
        .caption(
            "hedges a second; the host fails outright from the line on",
            ("sans-serif", 14),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0_f64..seconds as f64, 0.0_f64..f64::from(highest) * 1.2)?;
    load.configure_mesh()
        .x_desc("s")
        .y_desc("hedges /s")
        .draw()?;
    load.draw_series(LineSeries::new(
        [(fail_second, 0.0), (fail_second, f64::from(highest) * 1.2)],
        RED.stroke_width(2),
    ))?;
    load.draw_series(LineSeries::new(
        per_second
            .iter()
            .enumerate()
            .map(|(s, &n)| (s as f64 + 0.5, f64::from(n))),
        RGBColor(30, 90, 200).stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let plain = execute(Run::default())?;
    let hedged = execute(Run {
        hedge: true,
        ..Run::default()
    })?;
    let failing_run = Run {
        hedge: true,
        max_retries: 3,
        fail_at: Some(CALLS / 2),
        ..Run::default()
    };
    let failing = execute(failing_run)?;
    let fixed_delay = execute(Run {
        delay_ms: Some(FIXED_DELAY_MS),
        ..failing_run
    })?;
    let budget_alone = execute(Run {
        delay_ms: Some(FIXED_DELAY_MS),
        max_extra_load: Some(1.0),
        ..failing_run
    })?;
    println!(
        "hedging in virtual time: {CALLS} calls at {RATE}/s to a host at 9–11 ms with \
         {}% of calls at {} s",
        SLOW_SHARE * 100.0,
        SLOW.as_secs()
    );
    println!();
    println!("| client | p50 (ms) | p99 (ms) | p99.9 (ms) | extra load |");
    println!("|---|---:|---:|---:|---:|");
    for (label, outcome) in [("no hedging", &plain), ("hedging, defaults", &hedged)] {
        println!(
            "| {label} | {:.1} | {:.1} | {:.1} | {:.2} % |",
            ms(outcome.quantile(0.5)),
            ms(outcome.quantile(0.99)),
            ms(outcome.quantile(0.999)),
            outcome.extra_load() * 100.0,
        );
    }
    println!();
    println!(
        "p99 hedged / unhedged: {:.3}",
        ms(hedged.quantile(0.99)) / ms(plain.quantile(0.99))
    );
    let fail_second = failing
        .failing_from
        .ok_or("the failing run did not fail")?
        .as_secs_f64();
    for (label, outcome) in [
        ("defaults", &failing),
        ("a fixed delay of 15 ms", &fixed_delay),
        ("a fixed delay of 15 ms, no cap on the share", &budget_alone),
    ] {
        let (count, last) = outcome
            .hedges_after_failing()
            .ok_or("the failing run did not fail")?;
        println!(
            "host failing outright (hedging, {label}): {count} hedges after it failed, \
             the last {:.2} s in; hedges refused: {:?}",
            last.as_secs_f64(),
            outcome.refused
        );
    }
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    std::fs::create_dir_all(&docs)?;
    let svg = docs.join("hedging.svg");
    plot(&svg, &plain, &hedged, &failing, fail_second)?;
    println!("plot: {}", svg.canonicalize()?.display());
    Ok(())
}
