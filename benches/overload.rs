//! The overload experiment, in virtual time: what a server does with more
//! work than it can serve, with no admission, with tower's
//! `ConcurrencyLimit` + `LoadShed`, and with timebox's admission (A2:
//! `fixed:10`, `gradient2` and `vegas`).
//!
//! The server is a sim host (`timebox::sim::SimNet`) with 10 workers (a
//! semaphore) and a service time of 9, 10 or 11 ms (a mean of 10): a
//! capacity of 1000 requests a
//! second. Clients arrive at random (Poisson, one seeded source) at 0.5×,
//! 1×, 2× and 4× that capacity for 6 s each (the first second, while the
//! queue forms, is not measured), every request with a 200 ms
//! deadline (the timebox client sends it as `x-timebox-deadline-ms`, and
//! gives up at it; the sim host then drops the handler, as a server does
//! when its client hangs up). No retries, no breaker: the offered load is
//! what arrives.
//!
//! Three figures per run: the goodput (answers within their deadline, per
//! second) and the p99 latency of the admitted requests: those the server
//! let through to the handler, timed at the host from their arrival (before
//! any admission) until the handler ended, or was dropped when its client
//! gave up at the deadline (so a late one counts as at least 200 ms). A
//! request shed, or cut in timebox's queue, was not admitted. And the
//! range of an adaptive limit over the run, read from the limiter's
//! `concurrency limit moved` debug lines. The goal at
//! 4×: timebox's goodput at least 90 % of capacity, and its admitted p99 at
//! most twice the unloaded median.
//!
//! Run it (prints the table and rewrites `docs/overload.svg`):
//!
//! ```text
//! cargo bench -p timebox-benches --bench overload
//! ```

use std::error::Error;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::routing::get;
use axum::Extension;
use axum::Router;
use http::StatusCode;
use plotters::prelude::*;
use timebox::config::{Concurrency, Config};
use timebox::deadline::Deadline;
use timebox::entropy::Entropy;
use timebox::server::TimeboxLayer;
use timebox::sim::Sim;
use tokio::sync::Semaphore;
use tokio::time::{sleep, sleep_until, Instant};
use tower::ServiceBuilder;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

#[path = "support/virtual_load.rs"]
mod virtual_load;

use virtual_load::{paused_runtime, poisson_gap, quantile};

type BoxError = Box<dyn Error>;

const WORKERS: usize = 10;
/// The mean service time: 9, 10 or 11 ms, each as likely. Exactly equal
/// service times would free the slots in lockstep; whole milliseconds
/// because a paused tokio clock rounds every sleep up to one (a draw of
/// 9.2 ms would take 10), which would make the mean longer than this.
const SERVICE_TIME: Duration = Duration::from_millis(10);
/// Requests a second the workers can serve.
const CAPACITY: f64 = 1000.0;
const DEADLINE: Duration = Duration::from_millis(200);
/// How long each load is offered, and the first part of it that is not
/// measured (the queue forming).
const RUN: Duration = Duration::from_secs(6);
const WARM_UP: Duration = Duration::from_secs(1);
const LOADS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];
const SEED: u64 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    NoAdmission,
    TowerShed,
    TimeboxFixed,
    TimeboxGradient2,
    TimeboxVegas,
}

impl Variant {
    const ALL: [Self; 5] = [
        Self::NoAdmission,
        Self::TowerShed,
        Self::TimeboxFixed,
        Self::TimeboxGradient2,
        Self::TimeboxVegas,
    ];

    const fn label(self) -> &'static str {
        match self {
            Self::NoAdmission => "no admission",
            Self::TowerShed => "tower ConcurrencyLimit(10) + LoadShed",
            Self::TimeboxFixed => "timebox concurrency = \"fixed:10\"",
            Self::TimeboxGradient2 => "timebox concurrency = \"gradient2\"",
            Self::TimeboxVegas => "timebox concurrency = \"vegas\"",
        }
    }

    const fn color(self) -> RGBColor {
        match self {
            Self::NoAdmission => RGBColor(150, 150, 150),
            Self::TowerShed => RGBColor(230, 120, 30),
            Self::TimeboxFixed => RGBColor(30, 90, 200),
            Self::TimeboxGradient2 => RGBColor(40, 160, 80),
            Self::TimeboxVegas => RGBColor(170, 50, 160),
        }
    }

    /// The server of this variant: the workers behind its admission, with
    /// each request's arrival noted before it.
    fn router(self, server: Arc<Server>) -> Router {
        let service = Router::new().route("/", get(work)).with_state(server);
        let admission = |concurrency| {
            let mut config = Config::default();
            config.server.timeouts.accept_deadline_header = true;
            config.server.timeouts.request_timeout_ms = Some(1000);
            config.server.admission.concurrency = concurrency;
            TimeboxLayer::new(&config)
        };
        match self {
            Self::NoAdmission => service,
            Self::TowerShed => service.layer(
                ServiceBuilder::new()
                    .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                        StatusCode::SERVICE_UNAVAILABLE
                    }))
                    .load_shed()
                    .concurrency_limit(WORKERS),
            ),
            Self::TimeboxFixed => service.layer(admission(Concurrency::Fixed(
                NonZeroUsize::new(WORKERS).expect("10 is not 0"),
            ))),
            Self::TimeboxGradient2 => service.layer(admission(Concurrency::Gradient2)),
            Self::TimeboxVegas => service.layer(admission(Concurrency::Vegas)),
        }
        .layer(tower::util::MapRequestLayer::new(|mut request: Request| {
            request.extensions_mut().insert(Arrived(Instant::now()));
            request
        }))
    }
}

/// When a request reached the host, before its admission.
#[derive(Debug, Clone, Copy)]
struct Arrived(Instant);

/// A request the admission let through: its latency, from its arrival to
/// the end of its handler, is noted when the handler ends or is dropped.
struct Admitted {
    server: Arc<Server>,
    arrived: Instant,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let latency = self.arrived.elapsed();
        if let Ok(mut admitted) = self.server.admitted.lock() {
            admitted.push((self.arrived, latency));
        }
    }
}

/// One request's work: a worker for 9, 10 or 11 ms.
async fn work(
    State(server): State<Arc<Server>>,
    Extension(Arrived(arrived)): Extension<Arrived>,
) -> StatusCode {
    let _admitted = Admitted {
        server: Arc::clone(&server),
        arrived,
    };
    let Ok(_worker) = server.workers.acquire().await else {
        return StatusCode::INTERNAL_SERVER_ERROR;
    };
    let service_ms = server.entropy.uniform(9..=11);
    sleep(Duration::from_millis(service_ms)).await;
    StatusCode::OK
}

/// The sim host's workers, the random source of its service times, and
/// the admitted requests' arrivals and latencies.
struct Server {
    workers: Semaphore,
    entropy: Entropy,
    admitted: std::sync::Mutex<Vec<(Instant, Duration)>>,
}

/// The lowest and highest an adaptive limit was in one run, from the
/// limiter's `concurrency limit moved` lines (`limit`, and the `previous`
/// limit it moved from).
#[derive(Debug, Clone, Default)]
struct LimitRange(Arc<Mutex<Option<(u64, u64)>>>);

impl LimitRange {
    fn get(&self) -> Option<(u64, u64)> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<S: tracing::Subscriber> Layer<S> for LimitRange {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        metadata.target() == "timebox::admission::limiter"
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut limits = Limits::default();
        event.record(&mut limits);
        // Only the lines that say the limit moved: they carry the limit it
        // moved from (another limiter line, the start of a spell of
        // shedding, names the limit too).
        if limits.0[1].is_none() {
            return;
        }
        let mut range = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for limit in limits.0.into_iter().flatten() {
            let (low, high) = range.get_or_insert((limit, limit));
            *low = (*low).min(limit);
            *high = (*high).max(limit);
        }
    }
}

/// The `limit` and `previous` fields of one line.
#[derive(Default)]
struct Limits([Option<u64>; 2]);

impl Visit for Limits {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "limit" => self.0[0] = Some(value),
            "previous" => self.0[1] = Some(value),
            _ => {}
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

/// What one run saw, of the requests sent after the warm-up.
struct Outcome {
    /// The adaptive limit's range over the whole run, if it moved.
    limit: Option<(u64, u64)>,
    offered: usize,
    /// Latencies of the requests answered 200 within their deadline.
    good: Vec<Duration>,
    /// Latencies of the requests admitted, at the host.
    admitted: Vec<Duration>,
}

impl Outcome {
    /// Good answers a second over the measured part of the run.
    fn goodput(&self) -> f64 {
        self.good.len() as f64 / (RUN - WARM_UP).as_secs_f64()
    }

    /// A quantile of the admitted requests' latencies, in milliseconds;
    /// `None` when the run admitted none.
    fn quantile_ms(&self, q: f64) -> Option<f64> {
        quantile(&self.admitted, q).map(|latency| latency.as_secs_f64() * 1000.0)
    }
}

/// Offers `load` × capacity to `variant` for [`RUN`], in virtual time.
fn execute(variant: Variant, load: f64) -> Result<Outcome, BoxError> {
    let runtime = paused_runtime()?;
    let limit = LimitRange::default();
    let _logs =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(limit.clone()));
    runtime.block_on(async {
        let sim = Sim::new(SEED);
        let server = Arc::new(Server {
            workers: Semaphore::new(WORKERS),
            entropy: Entropy::seeded(SEED + 1),
            admitted: std::sync::Mutex::default(),
        });
        sim.net().host("svc", variant.router(Arc::clone(&server)));
        let mut config = Config::default();
        config.http.client.max_retries = 0;
        config.breaker.enabled = false;
        let client = sim.client_with(&config);
        let arrivals = Entropy::seeded(SEED);
        let rate = load * CAPACITY;
        let start = Instant::now();
        let mut next = start;
        let mut tasks = Vec::new();
        while next < start + RUN {
            sleep_until(next).await;
            let client = client.clone();
            let measured = next >= start + WARM_UP;
            tasks.push(tokio::spawn(async move {
                let sent = Instant::now();
                let result = Deadline::after(DEADLINE)
                    .scope(client.get("http://svc/").send())
                    .await;
                let took = sent.elapsed();
                let good = matches!(result, Ok(response) if response.status() == StatusCode::OK)
                    && took <= DEADLINE;
                (measured, good.then_some(took))
            }));
            // Poisson arrivals: exponential gaps of mean 1/rate.
            next += poisson_gap(&arrivals, rate);
        }
        let mut offered = 0;
        let mut good = Vec::new();
        for task in tasks {
            let (measured, took) = task.await?;
            offered += usize::from(measured);
            if let (true, Some(took)) = (measured, took) {
                good.push(took);
            }
        }
        let measured_from = start + WARM_UP;
        let admitted = server
            .admitted
            .lock()
            .map_err(|_| "a handler panicked")?
            .iter()
            .filter(|(arrived, _)| *arrived >= measured_from)
            .map(|&(_, latency)| latency)
            .collect();
        Ok(Outcome {
            limit: limit.get(),
            offered,
            good,
            admitted,
        })
    })
}

fn plot(
    path: &std::path::Path,
    results: &[(Variant, Vec<(f64, Outcome)>)],
    p99_goal_ms: f64,
) -> Result<(), BoxError> {
    let root = SVGBackend::new(path, (1000, 460)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "Overload: 10 workers × 10 ms (capacity 1000/s), clients with 200 ms deadlines",
        ("sans-serif", 18),
    )?;
    let (left, right) = root.split_horizontally(500);
    let mut goodput = ChartBuilder::on(&left)
        .caption(
            "goodput (answers within the deadline per second)",
            ("sans-serif", 14),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0_f64..4.5, 0.0_f64..1200.0)?;
    goodput
        .configure_mesh()
        .x_desc("offered load (× capacity)")
        .y_desc("goodput /s")
        .draw()?;
    goodput.draw_series(LineSeries::new(
        [(0.0, 900.0), (4.5, 900.0)],
        BLACK.mix(0.4).stroke_width(1),
    ))?;
    let mut tail = ChartBuilder::on(&right)
        .caption("p99 latency of admitted requests (log)", ("sans-serif", 14))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0_f64..4.5, (5.0_f64..300.0).log_scale())?;
    tail.configure_mesh()
        .x_desc("offered load (× capacity)")
        .y_desc("ms")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    tail.draw_series(LineSeries::new(
        [(0.0, p99_goal_ms), (4.5, p99_goal_ms)],
        BLACK.mix(0.4).stroke_width(1),
    ))?;
    for (variant, runs) in results {
        let color = variant.color();
        let points: Vec<(f64, f64)> = runs.iter().map(|(load, o)| (*load, o.goodput())).collect();
        goodput
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(variant.label())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        goodput.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        let p99: Vec<(f64, f64)> = runs
            .iter()
            .filter_map(|(load, o)| Some((*load, o.quantile_ms(0.99)?)))
            .collect();
        tail.draw_series(LineSeries::new(p99.clone(), color.stroke_width(2)))?;
        tail.draw_series(p99.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    goodput
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .label_font(("sans-serif", 12))
        .draw()?;
    root.present()?;
    Ok(())
}

/// `ms` to one decimal, or a dash for a run that admitted nothing.
fn one_decimal(ms: Option<f64>) -> String {
    ms.map_or_else(|| "–".to_owned(), |ms| format!("{ms:.1}"))
}

fn main() -> Result<(), BoxError> {
    let mut results = Vec::new();
    for variant in Variant::ALL {
        let mut runs = Vec::new();
        for load in LOADS {
            runs.push((load, execute(variant, load)?));
        }
        results.push((variant, runs));
    }
    let unloaded = results[0].1[0]
        .1
        .quantile_ms(0.5)
        .ok_or("the unloaded run admitted no request")?;
    println!(
        "overload in virtual time: {WORKERS} workers × {} ms (capacity {CAPACITY}/s), \
         200 ms deadlines, {} s per load, the first {} s not measured; unloaded median {:.1} ms",
        SERVICE_TIME.as_millis(),
        RUN.as_secs(),
        WARM_UP.as_secs(),
        unloaded
    );
    println!();
    println!("| admission | load | offered /s | goodput /s | goodput / capacity | admitted p50 (ms) | admitted p99 (ms) | adaptive limit |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (variant, runs) in &results {
        for (load, outcome) in runs {
            let limit = match outcome.limit {
                Some((low, high)) => format!("{low}–{high}"),
                None => "–".to_owned(),
            };
            println!(
                "| {} | {load}× | {:.0} | {:.0} | {:.3} | {} | {} | {limit} |",
                variant.label(),
                outcome.offered as f64 / (RUN - WARM_UP).as_secs_f64(),
                outcome.goodput(),
                outcome.goodput() / CAPACITY,
                one_decimal(outcome.quantile_ms(0.5)),
                one_decimal(outcome.quantile_ms(0.99)),
            );
        }
    }
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    std::fs::create_dir_all(&docs)?;
    let svg = docs.join("overload.svg");
    plot(&svg, &results, 2.0 * unloaded)?;
    println!();
    println!("plot: {}", svg.canonicalize()?.display());
    Ok(())
}
