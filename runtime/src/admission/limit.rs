//! Adaptive concurrency limits: how many requests the server lets run at once.
//!
//! Modelled on Netflix's `concurrency-limits` library
//! (<https://github.com/Netflix/concurrency-limits>, `Gradient2Limit` and
//! `VegasLimit`). `Fixed` never changes. `Gradient2` compares the mean
//! latency of a window of requests (a second, and at least ten requests, as
//! Netflix's `WindowedLimit` gathers them) with a long-term average: while
//! they agree the limit grows by a small queue allowance, and when latency
//! rises the limit shrinks with it.
//!
//! `Vegas` follows TCP Vegas: it remembers the lowest latency seen (the
//! "no load" latency), estimates the queue from how far the current latency is
//! above it, and grows or shrinks the limit to keep that queue small. Both only
//! grow while the server is busy (half the limit in flight), so a quiet server
//! does not inflate its limit; Vegas also shrinks on every dropped request.

use std::time::Duration;

use tokio::time::Instant;

use crate::config::Concurrency;

/// Smallest rtt the algorithms see. A zero `rtt` (a coarse clock, or an
/// instant answer) is raised to 1 µs rather than skipped, so it still counts
/// as a fast sample and no ratio ever divides by zero.
const MIN_RTT: Duration = Duration::from_micros(1);

/// Netflix `Gradient2Limit.Builder` default: initialLimit 20.
const GRADIENT2_INITIAL_LIMIT: f64 = 20.0;
/// Netflix `Gradient2Limit.Builder` default: minLimit 20.
const GRADIENT2_MIN_LIMIT: f64 = 20.0;
/// Netflix `Gradient2Limit.Builder` default: maxConcurrency 200.
const GRADIENT2_MAX_LIMIT: f64 = 200.0;
/// Netflix `Gradient2Limit.Builder` default: smoothing 0.2.
const GRADIENT2_SMOOTHING: f64 = 0.2;
/// Netflix `Gradient2Limit.Builder` default: rttTolerance 1.5 (how much
/// slower than the long-term rtt a sample may be before the limit shrinks).
const GRADIENT2_RTT_TOLERANCE: f64 = 1.5;
/// Netflix `Gradient2Limit.Builder` default: longWindow 600 samples (here,
/// as under Netflix's `WindowedLimit`, 600 windows).
const GRADIENT2_LONG_WINDOW: u32 = 600;
/// Netflix `Gradient2Limit` constructor: `new ExpAvgMeasurement(longWindow, 10)`,
/// so the first 10 samples are plainly averaged before exponential smoothing.
const GRADIENT2_WARMUP_WINDOW: u32 = 10;
/// Netflix `Gradient2Limit.Builder` default queue size function:
/// `concurrency -> 4`, a constant 4 whatever the limit.
const GRADIENT2_QUEUE_SIZE: f64 = 4.0;
/// Netflix `Gradient2Limit._update`: when long rtt / short rtt > 2 the long
/// rtt is multiplied by 0.95, so it recovers quickly after an overload.
const GRADIENT2_DRIFT_DECAY: f64 = 0.95;

/// Netflix `WindowedLimit.Builder` defaults: minWindowTime and maxWindowTime
/// 1 s. `Gradient2Limit` "re-calculates the limit every sampling window (ex.
/// 1 second)"; fed every request instead, its queue allowance of 4 would
/// grow the limit by 0.8 per request and outrun the long-term average.
const GRADIENT2_WINDOW: Duration = Duration::from_secs(1);
/// Netflix `WindowedLimit.Builder` default: windowSize 10, the fewest
/// requests a window needs to be used; a window with fewer is dropped.
const GRADIENT2_WINDOW_SAMPLES: u32 = 10;

/// Netflix `VegasLimit.Builder` default: initialLimit 20.
const VEGAS_INITIAL_LIMIT: f64 = 20.0;
/// Netflix `VegasLimit.updateEstimatedLimit` clamps with `Math.max(1, ...)`.
const VEGAS_MIN_LIMIT: f64 = 1.0;
/// Netflix `VegasLimit.Builder` default: maxConcurrency 1000.
const VEGAS_MAX_LIMIT: f64 = 1000.0;
/// Netflix `VegasLimit.Builder` default: smoothing 1.0 (no smoothing).
const VEGAS_SMOOTHING: f64 = 1.0;
/// Netflix `VegasLimit.Builder` default alpha function: `3 * log10(limit)`.
const VEGAS_ALPHA_FACTOR: f64 = 3.0;
/// Netflix `VegasLimit.Builder` default beta function: `6 * log10(limit)`.
const VEGAS_BETA_FACTOR: f64 = 6.0;
/// Netflix `VegasLimit.Builder` default: probeMultiplier 30. Every
/// `30 * limit` samples the no-load rtt is re-learned from the next sample.
const VEGAS_PROBE_MULTIPLIER: f64 = 30.0;

/// Netflix `Log10RootIntFunction`: `max(1, floor(log10(n)))`. Netflix
/// `VegasLimit.Builder` defaults use it as the threshold function and as the
/// step of the increase (`limit + log10`) and decrease (`limit - log10`) functions.
fn log10_root(n: usize) -> usize {
    n.checked_ilog10().unwrap_or(0).max(1) as usize
}

/// One of the limit algorithms, with its state.
#[derive(Debug, Clone)]
pub(crate) enum LimitAlgorithm {
    /// A constant limit.
    Fixed(usize),
    /// Netflix's gradient algorithm: latency against its long-term average.
    Gradient2(Gradient2),
    /// TCP Vegas: latency against the lowest latency seen.
    Vegas(Vegas),
}

impl LimitAlgorithm {
    /// The algorithm `concurrency` names, at its starting limit; `None` for
    /// `off`.
    pub(crate) fn from_config(concurrency: Concurrency) -> Option<Self> {
        match concurrency {
            Concurrency::Off => None,
            Concurrency::Fixed(limit) => Some(Self::Fixed(limit.get())),
            Concurrency::Gradient2 => Some(Self::Gradient2(Gradient2::default())),
            Concurrency::Vegas => Some(Self::Vegas(Vegas::default())),
        }
    }

    /// The number of requests that may run at once now (always >= 1).
    pub(crate) fn limit(&self) -> usize {
        match self {
            LimitAlgorithm::Fixed(n) => (*n).max(1),
            LimitAlgorithm::Gradient2(g) => floor_limit(g.limit),
            LimitAlgorithm::Vegas(v) => floor_limit(v.limit),
        }
    }

    /// Learns from one request that finished at `now`: how long it held its
    /// slot (`rtt`), how many requests were in flight when it started
    /// (`in_flight`, itself included), and whether it was dropped (timed
    /// out) rather than answered.
    pub(crate) fn on_sample(
        &mut self,
        now: Instant,
        rtt: Duration,
        in_flight: usize,
        dropped: bool,
    ) {
        let rtt = rtt.max(MIN_RTT).as_secs_f64();
        match self {
            LimitAlgorithm::Fixed(_) => {}
            // Like Netflix, Gradient2 ignores `dropped`: a timed-out request
            // already reports a long rtt, which lowers the gradient.
            LimitAlgorithm::Gradient2(g) => g.on_sample(now, rtt, in_flight as f64),
            LimitAlgorithm::Vegas(v) => v.on_sample(rtt, in_flight as f64, dropped),
        }
    }
}

/// Rounds an internal limit down to a whole number of slots, at least 1.
fn floor_limit(limit: f64) -> usize {
    (limit as usize).max(1)
}

/// State of Netflix's `Gradient2Limit`, with its builder defaults (the
/// constants above), fed one window of requests at a time. Per window:
/// `gradient = clamp(tolerance * long_rtt / rtt, 0.5, 1.0)`, target
/// `limit * gradient + queue_size`, smoothed and clamped.
#[derive(Debug, Clone)]
pub(crate) struct Gradient2 {
    limit: f64,
    /// Long-term rtt in seconds, as Netflix's `ExpAvgMeasurement`: a plain
    /// mean over the first warm-up windows, then an exponential average with
    /// factor `2 / (long_window + 1)`.
    long_rtt: f64,
    /// Windows averaged so far, counted up to the warm-up window.
    warmup_samples: u32,
    /// The requests of the window under way.
    window: SampleWindow,
}

impl Default for Gradient2 {
    /// Netflix's `Gradient2Limit.newDefault()`.
    fn default() -> Self {
        Gradient2 {
            limit: GRADIENT2_INITIAL_LIMIT,
            long_rtt: 0.0,
            warmup_samples: 0,
            window: SampleWindow::default(),
        }
    }
}

/// The requests of one window, as Netflix's `WindowedLimit` with an
/// `ImmutableAverageSampleWindow`: their mean rtt and the most that were in
/// flight. A window closes at the first request that finishes a window's
/// time after the last one closed (the very first request closes one at
/// once, so the first full window starts with it). Netflix also leaves out
/// requests under 100 µs (`minRttThreshold`); here, as for every algorithm,
/// such an rtt counts as at least [`MIN_RTT`].
#[derive(Debug, Clone, Default)]
struct SampleWindow {
    /// When the window under way closes; `None` before the first request.
    closes: Option<Instant>,
    rtt_sum: f64,
    samples: u32,
    max_in_flight: f64,
}

impl SampleWindow {
    /// Adds one request; when it closes the window, the window's mean rtt
    /// and most in flight, if it held enough requests to go by.
    fn add(&mut self, now: Instant, rtt: f64, in_flight: f64) -> Option<(f64, f64)> {
        self.rtt_sum += rtt;
        self.samples += 1;
        self.max_in_flight = self.max_in_flight.max(in_flight);
        if self.closes.is_some_and(|closes| now < closes) {
            return None;
        }
        let closed = std::mem::replace(
            self,
            SampleWindow {
                closes: Some(now + GRADIENT2_WINDOW),
                ..SampleWindow::default()
            },
        );
        (closed.samples >= GRADIENT2_WINDOW_SAMPLES).then(|| {
            (
                closed.rtt_sum / f64::from(closed.samples),
                closed.max_in_flight,
            )
        })
    }
}

impl Gradient2 {
    /// One request that finished at `now`; `rtt` is in seconds and positive.
    fn on_sample(&mut self, now: Instant, rtt: f64, in_flight: f64) {
        if let Some((rtt, in_flight)) = self.window.add(now, rtt, in_flight) {
            self.update(rtt, in_flight);
        }
    }

    /// One window: its mean `rtt`, in seconds, and the most `in_flight`.
    fn update(&mut self, rtt: f64, in_flight: f64) {
        if self.warmup_samples < GRADIENT2_WARMUP_WINDOW {
            self.warmup_samples += 1;
            self.long_rtt += (rtt - self.long_rtt) / f64::from(self.warmup_samples);
        } else {
            let factor = 2.0 / (f64::from(GRADIENT2_LONG_WINDOW) + 1.0);
            self.long_rtt += (rtt - self.long_rtt) * factor;
        }
        let long_rtt = self.long_rtt;
        // After a long overload the average lags far above the current rtt;
        // pull it down faster than smoothing alone would.
        if long_rtt / rtt > 2.0 {
            self.long_rtt *= GRADIENT2_DRIFT_DECAY;
        }
        // App-limited: too little traffic to learn whether more would fit.
        if in_flight < self.limit / 2.0 {
            return;
        }
        // Never shrink by more than half at once, so one outlier cannot
        // shed most of the load; the gradient itself never grows the limit.
        let gradient = (GRADIENT2_RTT_TOLERANCE * long_rtt / rtt).clamp(0.5, 1.0);
        let target = self.limit.mul_add(gradient, GRADIENT2_QUEUE_SIZE);
        let smoothed = self
            .limit
            .mul_add(1.0 - GRADIENT2_SMOOTHING, target * GRADIENT2_SMOOTHING);
        self.limit = smoothed.clamp(GRADIENT2_MIN_LIMIT, GRADIENT2_MAX_LIMIT);
    }
}

/// State of Netflix's `VegasLimit`, with its builder defaults. The queue
/// estimate is `ceil(limit * (1 - rtt_noload / rtt))`: at most `threshold`
/// grows fast (+beta), under `alpha` grows slowly, over `beta` shrinks.
///
/// Netflix re-probes the no-load rtt after `jitter * 30 * limit` samples, with
/// `jitter` random in [0.5, 1) so many instances do not probe together. This
/// deterministic version leaves the jitter out and probes after `30 * limit`.
#[derive(Debug, Clone)]
pub(crate) struct Vegas {
    limit: f64,
    /// Lowest rtt seen since the last probe, in seconds; `None` before any.
    rtt_noload: Option<f64>,
    /// Samples since the last probe.
    probe_count: u64,
}

impl Default for Vegas {
    /// Netflix's `VegasLimit.newDefault()`.
    fn default() -> Self {
        Vegas {
            limit: VEGAS_INITIAL_LIMIT,
            rtt_noload: None,
            probe_count: 0,
        }
    }
}

impl Vegas {
    /// One sample; `rtt` is in seconds and positive.
    fn on_sample(&mut self, rtt: f64, in_flight: f64, dropped: bool) {
        self.probe_count += 1;
        if self.probe_count as f64 >= VEGAS_PROBE_MULTIPLIER * self.limit {
            // Re-learn the no-load rtt, so a lasting rise in base latency
            // does not read as queueing forever.
            self.probe_count = 0;
            self.rtt_noload = Some(rtt);
            return;
        }
        let noload = match self.rtt_noload {
            Some(noload) if rtt >= noload => noload,
            _ => {
                self.rtt_noload = Some(rtt);
                return;
            }
        };
        let log10 = log10_root(floor_limit(self.limit)) as f64;
        let (alpha, beta) = (VEGAS_ALPHA_FACTOR * log10, VEGAS_BETA_FACTOR * log10);
        let target = if dropped {
            self.limit - log10
        } else if in_flight * 2.0 < self.limit {
            return; // App-limited: no evidence that more would fit.
        } else {
            let queue = (self.limit * (1.0 - noload / rtt)).ceil();
            if queue <= log10 {
                self.limit + beta // At most the threshold: no queueing.
            } else if queue < alpha {
                self.limit + log10
            } else if queue > beta {
                self.limit - log10
            } else {
                return;
            }
        };
        let clamped = target.clamp(VEGAS_MIN_LIMIT, VEGAS_MAX_LIMIT);
        self.limit = (1.0 - VEGAS_SMOOTHING).mul_add(self.limit, VEGAS_SMOOTHING * clamped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const TEN_MS: Duration = Duration::from_millis(10);

    /// Feeds `n` samples at `rtt` that finish together, each with the
    /// server full (in_flight = limit).
    fn busy(alg: &mut LimitAlgorithm, rtt: Duration, n: usize) {
        let now = Instant::now();
        for _ in 0..n {
            let in_flight = alg.limit();
            alg.on_sample(now, rtt, in_flight, false);
        }
    }

    /// Feeds gradient2 `n` windows whose mean rtt is `rtt`, each with the
    /// server full.
    fn busy_windows(g: &mut Gradient2, rtt: Duration, n: usize) {
        for _ in 0..n {
            let in_flight = g.limit;
            g.update(rtt.as_secs_f64(), in_flight);
        }
    }

    /// Feeds `alg` a request at `rtt` every 50 ms for `seconds`, each with
    /// the server full: twenty a window.
    fn busy_for(alg: &mut LimitAlgorithm, rtt: Duration, seconds: u32) {
        let start = Instant::now();
        for i in 0..seconds * 20 {
            let in_flight = alg.limit();
            alg.on_sample(start + i * 50 * MS, rtt, in_flight, false);
        }
    }

    fn gradient2(alg: &LimitAlgorithm) -> &Gradient2 {
        match alg {
            LimitAlgorithm::Gradient2(g) => g,
            other => panic!("not gradient2: {other:?}"),
        }
    }

    #[test]
    fn fixed_ignores_samples_and_is_at_least_one() {
        let mut alg = LimitAlgorithm::Fixed(7);
        busy(&mut alg, TEN_MS, 100);
        alg.on_sample(Instant::now(), TEN_MS * 100, 7, true);
        assert_eq!(alg.limit(), 7);
        assert_eq!(LimitAlgorithm::Fixed(0).limit(), 1);
    }

    #[test]
    fn gradient2_grows_when_latency_is_flat_and_busy() {
        let mut g = Gradient2::default();
        busy_windows(&mut g, TEN_MS, 50);
        assert!(floor_limit(g.limit) > 40, "limit {}", g.limit);
        busy_windows(&mut g, TEN_MS, 1000);
        assert_eq!(floor_limit(g.limit), 200, "stops at max");
    }

    #[test]
    fn gradient2_grows_by_at_most_the_queue_allowance_per_window() {
        let mut g = Gradient2::default();
        busy_windows(&mut g, TEN_MS, 10);
        // Gradient capped at 1.0: each window adds smoothing * 4 = 0.8.
        assert!(
            (27..=28).contains(&floor_limit(g.limit)),
            "limit {}",
            g.limit
        );
    }

    #[test]
    fn gradient2_shrinks_by_at_most_half_the_gradient_on_an_outlier() {
        let mut g = Gradient2::default();
        busy_windows(&mut g, TEN_MS, 300);
        busy_windows(&mut g, TEN_MS * 10, 1);
        // Gradient floored at 0.5: 200 * (0.8 + 0.2 * 0.5) + 0.8.
        assert_eq!(floor_limit(g.limit), 180);
    }

    #[test]
    fn gradient2_shrinks_when_latency_doubles() {
        let mut g = Gradient2::default();
        busy_windows(&mut g, TEN_MS, 300);
        let before = floor_limit(g.limit);
        busy_windows(&mut g, TEN_MS * 2, 20);
        assert!(
            floor_limit(g.limit) < before * 3 / 4,
            "{} -> {}",
            before,
            g.limit
        );
        busy_windows(&mut g, TEN_MS * 2, 500);
        assert!(floor_limit(g.limit) >= 20, "stays at or above min");
    }

    #[test]
    fn gradient2_tolerates_latency_up_to_one_and_a_half_times() {
        let mut g = Gradient2::default();
        busy_windows(&mut g, TEN_MS, 100);
        // At 1.45 times the average the gradient is still 1: the limit
        // moves a fifth of the way to itself plus the queue allowance.
        let before = g.limit;
        busy_windows(&mut g, TEN_MS * 145 / 100, 1);
        let grown = GRADIENT2_SMOOTHING.mul_add(GRADIENT2_QUEUE_SIZE, before);
        assert!((g.limit - grown).abs() < 1e-9, "{before} -> {}", g.limit);
        // At 1.7 times it is below 1, and outweighs the allowance.
        let before = g.limit;
        busy_windows(&mut g, TEN_MS * 170 / 100, 1);
        assert!(g.limit < before, "{before} -> {}", g.limit);
    }

    #[test]
    fn gradient2_does_not_grow_when_app_limited() {
        let mut g = Gradient2::default();
        (0..500).for_each(|_| g.update(0.01, 5.0));
        assert_eq!(floor_limit(g.limit), 20);
    }

    #[test]
    fn gradient2_long_rtt_recovers_fast_after_overload() {
        let mut g = Gradient2::default();
        (0..2000).for_each(|_| g.update(0.1, 200.0));
        (0..50).for_each(|_| g.update(0.01, 200.0));
        // Smoothing alone (factor 2/601) would still be near 0.085 s.
        assert!(g.long_rtt < 0.03, "long rtt {}", g.long_rtt);
    }

    /// A gradient2 given the request that closes the first, empty window at
    /// `start`, and `inside` more within the next second, each of 10 ms with
    /// the server full.
    fn with_window_open(start: Instant, inside: u32) -> Gradient2 {
        let mut g = Gradient2::default();
        g.on_sample(start, 0.01, 20.0);
        (1..=inside).for_each(|i| g.on_sample(start + i * 990 / inside * MS, 0.01, 20.0));
        g
    }

    #[test]
    fn gradient2_learns_once_a_window_of_a_second_holds_ten_requests() {
        let start = Instant::now();
        let mut g = with_window_open(start, 20);
        assert_eq!((g.limit, g.warmup_samples), (20.0, 0), "the window is open");
        g.on_sample(start + 1000 * MS, 0.01, 20.0);
        // One window of 21 requests: 20 * 0.8 + (20 + 4) * 0.2.
        assert_eq!(g.warmup_samples, 1);
        assert!((g.limit - 20.8).abs() < 1e-9, "limit {}", g.limit);
    }

    #[test]
    fn gradient2_drops_a_window_of_fewer_than_ten_requests() {
        let start = Instant::now();
        let mut g = with_window_open(start, 9);
        g.on_sample(start + 1000 * MS, 0.01, 20.0); // the tenth closes it
        assert_eq!(g.warmup_samples, 1, "ten requests are a window");
        let mut g = with_window_open(start, 8);
        g.on_sample(start + 1000 * MS, 0.01, 20.0); // only nine
        assert_eq!((g.limit, g.warmup_samples), (20.0, 0));
    }

    #[test]
    fn gradient2_reads_a_window_by_its_mean_rtt_and_most_in_flight() {
        let start = Instant::now();
        let mut g = Gradient2::default();
        g.on_sample(start, 0.01, 20.0);
        for i in 1..=20 {
            let rtt = if i % 2 == 0 { 0.01 } else { 0.03 };
            // One request with the server full: the window is not
            // app-limited.
            let in_flight = if i == 10 { 20.0 } else { 5.0 };
            g.on_sample(start + i * 49 * MS, rtt, in_flight);
        }
        // The request that closes the window is neither its mean nor its
        // most.
        g.on_sample(start + 1000 * MS, 0.01, 5.0);
        let mean = 0.41 / 21.0;
        assert!((g.long_rtt - mean).abs() < 1e-9, "long rtt {}", g.long_rtt);
        assert!(g.limit > 20.0, "limit {}", g.limit);
    }

    #[test]
    fn vegas_grows_when_latency_is_flat_and_busy() {
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        busy(&mut alg, TEN_MS, 20);
        assert!(alg.limit() > 100, "limit {}", alg.limit());
        busy(&mut alg, TEN_MS, 5000);
        assert_eq!(alg.limit(), 1000, "stops at max");
    }

    #[test]
    fn vegas_shrinks_on_a_dropped_sample_down_to_one() {
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        let now = Instant::now();
        alg.on_sample(now, TEN_MS, 20, false); // learns rtt_noload
        alg.on_sample(now, TEN_MS, 20, true);
        assert_eq!(alg.limit(), 19);
        (0..100).for_each(|_| alg.on_sample(now, TEN_MS, 1, true));
        assert_eq!(alg.limit(), 1, "stays at min");
    }

    #[test]
    fn vegas_shrinks_when_latency_rises_above_noload() {
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        let now = Instant::now();
        alg.on_sample(now, TEN_MS * 3, 20, false);
        alg.on_sample(now, TEN_MS, 20, false); // a lower rtt becomes rtt_noload
        busy(&mut alg, TEN_MS * 3, 30);
        // Queue estimate limit * 2/3 exceeds beta (6) until limit is 9.
        assert_eq!(alg.limit(), 9);
    }

    #[test]
    fn vegas_does_not_grow_when_app_limited() {
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        let now = Instant::now();
        (0..500).for_each(|_| alg.on_sample(now, TEN_MS, 5, false));
        assert_eq!(alg.limit(), 20);
    }

    #[test]
    fn vegas_probe_relearns_a_higher_noload_rtt() {
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        alg.on_sample(Instant::now(), TEN_MS, 20, false);
        busy(&mut alg, TEN_MS * 3, 30);
        assert_eq!(alg.limit(), 9);
        // The probe after 30 * 9 samples takes 30 ms as the new no-load rtt.
        busy(&mut alg, TEN_MS * 3, 300);
        assert!(alg.limit() > 20, "limit {}", alg.limit());
    }

    #[test]
    fn zero_rtt_is_treated_as_one_microsecond() {
        let mut alg = LimitAlgorithm::Gradient2(Gradient2::default());
        busy_for(&mut alg, Duration::ZERO, 300);
        assert_eq!(alg.limit(), 200, "flat (1 µs) latency grows to max");
        assert!((gradient2(&alg).long_rtt - 1e-6).abs() < 1e-12);
        let mut alg = LimitAlgorithm::Vegas(Vegas::default());
        let now = Instant::now();
        alg.on_sample(now, Duration::ZERO, 20, false);
        alg.on_sample(now, TEN_MS, 20, false);
        assert_eq!(alg.limit(), 19, "10 ms is far above 1 µs: queueing");
    }
}
