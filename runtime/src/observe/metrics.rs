//! [`MetricsObserver`]: the events as metrics, through the `metrics` facade.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hasher;
use std::sync::{PoisonError, RwLock};

use metrics::{Label, Unit};
use rustc_hash::{FxBuildHasher, FxHasher};

use super::metric::{measure, Kind, Metric, Value, METRICS};
use super::{Event, Observer};

/// An observer that turns events into the metrics of [`METRICS`] through
/// the [`metrics`] facade, so any recorder shows them
/// (`metrics-exporter-prometheus`, StatsD, ..). Feature `metrics`.
///
/// [`MetricsObserver::new`] describes every metric to the recorder
/// installed then (the global one, or a thread's local one), so install the
/// recorder first (with `install_recorder`, also run its upkeep every few
/// seconds: until then the recorder keeps every histogram sample). Give a
/// Prometheus recorder the buckets of [`SECONDS_BUCKETS`](super::SECONDS_BUCKETS)
/// for `timebox` metrics, or it shows the histograms as summaries. Each
/// series' handle is registered with that recorder the first time the
/// series is seen and kept: later events of the series cost a lookup and an
/// update, no allocation. So a recorder that drops idle series
/// (`metrics-exporter-prometheus`'s `idle_timeout`) would lose a quiet
/// one for good: leave that off for timebox's metrics.
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
/// use timebox::observe::MetricsObserver;
///
/// // metrics_exporter_prometheus::PrometheusBuilder::new()
/// //     .set_buckets_for_metric(Matcher::Prefix("timebox".into()), SECONDS_BUCKETS)?
/// //     .install_recorder()?;
/// let config = Config::default().observed_by(MetricsObserver::new());
/// # let _ = config;
/// ```
pub struct MetricsObserver {
    /// The handles of the series seen so far, by a hash of the metric's
    /// name and attribute values.
    series: RwLock<HashMap<u64, Vec<Series>, FxBuildHasher>>,
}

/// One series: a metric with its attribute values, and its handle.
struct Series {
    name: &'static str,
    values: Box<[Box<str>]>,
    handle: Handle,
}

enum Handle {
    Counter(metrics::Counter),
    Gauge(metrics::Gauge),
    Histogram(metrics::Histogram),
}

impl MetricsObserver {
    /// An observer, after describing every metric of [`METRICS`] (its unit
    /// and description) to the installed recorder.
    #[must_use]
    pub fn new() -> Self {
        for metric in METRICS {
            let unit = match metric.unit {
                Some("s") => Unit::Seconds,
                _ => Unit::Count,
            };
            let name = metric.name;
            let description = metric.description;
            match metric.kind {
                Kind::Counter => metrics::describe_counter!(name, unit, description),
                Kind::Gauge => metrics::describe_gauge!(name, unit, description),
                Kind::Histogram => metrics::describe_histogram!(name, unit, description),
            }
        }
        Self {
            series: RwLock::new(HashMap::with_hasher(FxBuildHasher)),
        }
    }

    /// Applies `value` to the series of `metric` with `values`, registering
    /// it on first sight.
    fn update(&self, metric: &'static Metric, value: Value, values: &[&str]) {
        let key = fingerprint(metric.name, values);
        let known = self.series.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = find(&known, key, metric.name, values) {
            series.handle.apply(value);
            return;
        }
        drop(known);
        let mut known = self.series.write().unwrap_or_else(PoisonError::into_inner);
        // Another event may have registered it between the two locks.
        if let Some(series) = find(&known, key, metric.name, values) {
            series.handle.apply(value);
            return;
        }
        let series = Series {
            name: metric.name,
            values: values.iter().map(|value| Box::from(*value)).collect(),
            handle: Handle::register(metric, values),
        };
        series.handle.apply(value);
        known.entry(key).or_default().push(series);
    }
}

/// A hash of the name and the values, with rustc's Fx hash: it reads
/// these short strings a word at a time, where a byte-at-a-time hash (FNV)
/// took a tenth of an observed request and SipHash more. Collisions only
/// cost a comparison: [`find`] checks the strings. The map keyed by it
/// hashes the key again with the same one-multiply hasher.
fn fingerprint(name: &str, values: &[&str]) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(name.as_bytes());
    for value in values {
        hasher.write_usize(value.len());
        hasher.write(value.as_bytes());
    }
    hasher.finish()
}

fn find<'a>(
    known: &'a HashMap<u64, Vec<Series>, FxBuildHasher>,
    key: u64,
    name: &str,
    values: &[&str],
) -> Option<&'a Series> {
    // The names are the table's own strings: the same pointer, short of a
    // copy of the constant.
    known.get(&key)?.iter().find(|series| {
        (std::ptr::eq(series.name, name) || series.name == name)
            && series.values.len() == values.len()
            && series.values.iter().zip(values).all(|(a, b)| &**a == *b)
    })
}

impl Handle {
    fn register(metric: &'static Metric, values: &[&str]) -> Self {
        let labels: Vec<Label> = metric
            .attributes
            .iter()
            .zip(values)
            .map(|(key, value)| Label::new(*key, (*value).to_owned()))
            .collect();
        let name = metric.name;
        match metric.kind {
            Kind::Counter => Self::Counter(metrics::counter!(name, labels)),
            Kind::Gauge => Self::Gauge(metrics::gauge!(name, labels)),
            Kind::Histogram => Self::Histogram(metrics::histogram!(name, labels)),
        }
    }

    fn apply(&self, value: Value) {
        match (self, value) {
            (Self::Counter(counter), Value::Increment) => counter.increment(1),
            (Self::Gauge(gauge), Value::Set(value)) => gauge.set(value),
            (Self::Histogram(histogram), Value::Record(value)) => histogram.record(value),
            // The table gives each metric one kind and `measure` moves it
            // only as that kind.
            _ => {}
        }
    }
}

impl Default for MetricsObserver {
    fn default() -> Self {
        Self::new()
    }
}

impl Observer for MetricsObserver {
    fn on_event(&self, event: &Event) {
        measure(event, |metric, value, values| {
            self.update(metric, value, values)
        });
    }
}

impl fmt::Debug for MetricsObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let series = self
            .series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum::<usize>();
        f.debug_struct("MetricsObserver")
            .field("series", &series)
            .finish()
    }
}
