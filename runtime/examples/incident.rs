//! A simulated incident, drawn from `sim.observed()` into
//! `docs/incident.svg`: one upstream fails for 30 s of virtual time and
//! recovers, and the picture shows, second by second, what the client
//! decided about it.
//!
//! A client sends 20 requests a second to `http://up/` for 90 s of virtual
//! time, each under a 1 s deadline. From 30 s to 60 s the upstream answers
//! every request 503. The breaker opens after 10 calls of which half failed,
//! stays open 5 s, then admits 3 trial calls. The panels:
//!
//! 1. attempts per second by kind (first, retry), and the calls the open
//!    breaker refused without sending;
//! 2. retries not made per second, by reason;
//! 3. the host's retry-budget tokens;
//! 4. the host's breaker state (0 closed, 1 half-open, 2 open).
//!
//! Everything runs in virtual time on the simulation's clock, so the run
//! takes well under a second and the same seed draws the same picture.
//!
//! ```text
//! cargo run -p timebox --example incident --features sim
//! ```

use std::collections::BTreeMap;
use std::error::Error;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use plotters::prelude::*;
use timebox::breaker::BreakerState;
use timebox::client::AttemptKind;
use timebox::deadline::Deadline;
use timebox::observe::{BreakerCallOutcome, Event, SkipReason};
use timebox::sim::Sim;
use tokio::time::Instant;

type BoxError = Box<dyn Error + Send + Sync>;

/// Seconds of virtual time the run lasts.
const SECONDS: usize = 90;
/// When the upstream fails, in seconds.
const OUTAGE: std::ops::Range<usize> = 30..60;
/// Requests the client sends each second.
const RATE: u32 = 20;

/// What one second of the run saw.
#[derive(Debug, Default, Clone)]
struct Second {
    attempts: BTreeMap<&'static str, u32>,
    skipped: BTreeMap<&'static str, u32>,
    tokens: Option<f64>,
    breaker: Option<f64>,
}

fn main() -> Result<(), BoxError> {
    let seconds = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?
        .block_on(run(Sim::new(0)))?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/incident.svg");
    plot(&path, &seconds)?;
    println!("second  first  retry  refused  skipped               tokens  breaker");
    let tokens = held(seconds.iter().map(|s| s.tokens), 500.0);
    let state = held(seconds.iter().map(|s| s.breaker), 0.0);
    for (at, seen) in seconds.iter().enumerate().step_by(5) {
        let skipped: Vec<String> = seen
            .skipped
            .iter()
            .map(|(reason, n)| format!("{reason}={n}"))
            .collect();
        println!(
            "{at:>6}  {:>5}  {:>5}  {:>7}  {:<20}  {:>6.1}  {}",
            seen.attempts.get("first").copied().unwrap_or(0),
            seen.attempts.get("retry").copied().unwrap_or(0),
            seen.attempts.get("refused").copied().unwrap_or(0),
            skipped.join(","),
            tokens[at].1,
            state[at].1,
        );
    }
    println!("plot: {}", path.canonicalize()?.display());
    Ok(())
}

/// Runs the incident; what each second saw, from the events the run told.
async fn run(sim: Sim) -> Result<Vec<Second>, BoxError> {
    let failing = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&failing);
    sim.net().host(
        "up",
        axum::Router::new().route(
            "/",
            axum::routing::get(move || {
                let failing = flag.load(Ordering::SeqCst);
                async move {
                    if failing {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        ),
    );
    let mut config = sim.config();
    config.breaker.minimum_sample_count = 10;
    config.breaker.open_secs = 5;
    config.breaker.half_open_trials = 3;
    let client = sim.client_with(&config);
    let start = Instant::now();
    let gap = Duration::from_secs(1) / RATE;
    let mut seconds = vec![Second::default(); SECONDS];
    let mut told = 0;
    for (at, seen) in seconds.iter_mut().enumerate() {
        failing.store(OUTAGE.contains(&at), Ordering::SeqCst);
        for n in 0..RATE {
            let due = start + Duration::from_secs(at as u64) + gap * n;
            tokio::time::sleep_until(due).await;
            // Each answer is the caller's either way: the picture is about
            // the decisions the client made on the way.
            let _ = Deadline::after(Duration::from_secs(1))
                .scope(client.get("http://up/").send())
                .await;
            let events = sim.observed();
            for event in &events[told..] {
                count(seen, event);
            }
            told = events.len();
        }
    }
    Ok(seconds)
}

fn count(second: &mut Second, event: &Event) {
    match event {
        Event::AttemptStarted { attempt, .. } => {
            let kind = match attempt.kind {
                AttemptKind::First => "first",
                _ => "retry",
            };
            *second.attempts.entry(kind).or_default() += 1;
        }
        Event::RetrySkipped { reason, .. } => {
            *second.skipped.entry(reason.as_str()).or_default() += 1;
        }
        Event::BreakerCall {
            outcome: BreakerCallOutcome::Rejected,
            ..
        } => *second.attempts.entry("refused").or_default() += 1,
        Event::BudgetTokens { tokens, .. } => second.tokens = Some(*tokens),
        Event::BreakerTransition { to, .. } => second.breaker = Some(to.gauge()),
        _ => {}
    }
}

/// Carries the last known value forward through the seconds that told
/// none, from `initial`.
fn held(values: impl Iterator<Item = Option<f64>>, initial: f64) -> Vec<(f64, f64)> {
    let mut last = initial;
    values
        .enumerate()
        .map(|(second, value)| {
            last = value.unwrap_or(last);
            (second as f64, last)
        })
        .collect()
}

fn plot(path: &Path, seconds: &[Second]) -> Result<(), BoxError> {
    let root = SVGBackend::new(path, (1000, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "One upstream fails from 30 s to 60 s: what the client decided, per second",
        ("sans-serif", 20),
    )?;
    let panels = root.split_evenly((4, 1));
    let x = 0.0..SECONDS as f64;
    let outage = (OUTAGE.start as f64, OUTAGE.end as f64);
    let shade = RGBColor(240, 225, 225);

    let per_second = |pick: &dyn Fn(&Second) -> u32| -> Vec<(f64, f64)> {
        seconds
            .iter()
            .enumerate()
            .map(|(second, seen)| (second as f64, f64::from(pick(seen))))
            .collect()
    };

    // 1. Attempts per second by kind.
    let first = per_second(&|s| s.attempts.get("first").copied().unwrap_or(0));
    let retry = per_second(&|s| s.attempts.get("retry").copied().unwrap_or(0));
    let refused = per_second(&|s| s.attempts.get("refused").copied().unwrap_or(0));
    let top = first
        .iter()
        .chain(&retry)
        .chain(&refused)
        .map(|(_, y)| *y)
        .fold(1.0, f64::max);
    let mut chart = panel_chart(
        &panels[0],
        "attempts per second, by kind",
        x.clone(),
        0.0..top * 1.2,
    )?;
    outage_band(&mut chart, outage, top * 1.2, shade)?;
    series(&mut chart, &first, BLUE, "first")?;
    series(&mut chart, &retry, RED, "retry")?;
    series(
        &mut chart,
        &refused,
        BLACK,
        "refused by the open breaker (not sent)",
    )?;
    legend(&mut chart)?;

    // 2. Retries not made per second, by reason.
    let reasons = [
        SkipReason::Budget,
        SkipReason::Deadline,
        SkipReason::MaxAttempts,
        SkipReason::BreakerOpen,
    ];
    let lines: Vec<_> = reasons
        .iter()
        .map(|reason| {
            let name = reason.as_str();
            (
                name,
                per_second(&|s| s.skipped.get(name).copied().unwrap_or(0)),
            )
        })
        .collect();
    let top = lines
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(_, y)| *y))
        .fold(1.0, f64::max);
    let mut chart = panel_chart(
        &panels[1],
        "retries not made per second, by reason",
        x.clone(),
        0.0..top * 1.2,
    )?;
    outage_band(&mut chart, outage, top * 1.2, shade)?;
    let colours = [MAGENTA, GREEN, CYAN, BLACK];
    for ((name, points), colour) in lines.iter().zip(colours) {
        series(&mut chart, points, colour, name)?;
    }
    legend(&mut chart)?;

    // 3. The retry budget's tokens.
    let tokens = held(seconds.iter().map(|s| s.tokens), 500.0);
    let mut chart = panel_chart(
        &panels[2],
        "retry-budget tokens of up:80",
        x.clone(),
        0.0..550.0,
    )?;
    outage_band(&mut chart, outage, 550.0, shade)?;
    series(&mut chart, &tokens, BLUE, "tokens")?;
    legend(&mut chart)?;

    // 4. The breaker's state.
    let state = held(
        seconds.iter().map(|s| s.breaker),
        BreakerState::Closed.gauge(),
    );
    let mut chart = panel_chart(
        &panels[3],
        "breaker of up:80 (0 closed, 1 half-open, 2 open)",
        x,
        -0.2..2.4,
    )?;
    outage_band(&mut chart, outage, 2.4, shade)?;
    series(&mut chart, &state, RED, "state")?;
    legend(&mut chart)?;

    root.present()?;
    Ok(())
}

type Chart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn panel_chart<'a>(
    panel: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Chart<'a>, BoxError> {
    let mut chart = ChartBuilder::on(panel)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc("virtual time, s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    Ok(chart)
}

fn outage_band(
    chart: &mut Chart<'_>,
    (from, to): (f64, f64),
    top: f64,
    shade: RGBColor,
) -> Result<(), BoxError> {
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(from, 0.0), (to, top)],
            shade.filled(),
        )))?
        .label("upstream failing")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], shade.filled()));
    Ok(())
}

fn series(
    chart: &mut Chart<'_>,
    points: &[(f64, f64)],
    colour: RGBColor,
    name: &str,
) -> Result<(), BoxError> {
    chart
        .draw_series(LineSeries::new(
            points.iter().copied(),
            colour.stroke_width(2),
        ))?
        .label(name.to_owned())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    Ok(())
}

fn legend(chart: &mut Chart<'_>) -> Result<(), BoxError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}
