//! [`MetricsObserver`]: the events as metrics, through the `metrics` facade.

use std::collections::HashMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use metrics::{Label, Unit};

use super::metric::{measure, Kind, Metric, Value, METRICS};
use super::{Event, Observer};

/// An observer that turns events into the metrics of [`METRICS`] through
/// the [`metrics`] facade, so any recorder shows them
/// (`metrics-exporter-prometheus`, StatsD, ..).
///
/// [`MetricsObserver::new`] describes every metric to the recorder
/// installed then (the global one, or a thread's local one), so install the
/// recorder first. Each series' handle is registered with that recorder the
/// first time the series is seen and kept: later events of the series cost
/// a lookup and an update, no allocation.
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
/// use timebox::observe::MetricsObserver;
///
/// // metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
/// let config = Config::default().observed_by(MetricsObserver::new());
/// # let _ = config;
/// ```
pub struct MetricsObserver {
    /// The handles of the series seen so far, by a hash of the metric's
    /// name and attribute values.
    series: RwLock<HashMap<u64, Vec<Series>>>,
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
            series: RwLock::new(HashMap::new()),
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

/// FNV-1a over the name and the values, each ended by a 0xff (a byte no
/// UTF-8 string holds): a few nanoseconds for these short strings, where
/// SipHash took a tenth of an observed request. Collisions only cost a
/// comparison: [`find`] checks the strings.
fn fingerprint(name: &str, values: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut hash = OFFSET;
    for part in std::iter::once(name).chain(values.iter().copied()) {
        for &byte in part.as_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(PRIME);
        }
        hash = (hash ^ 0xff).wrapping_mul(PRIME);
    }
    hash
}

fn find<'a>(
    known: &'a HashMap<u64, Vec<Series>>,
    key: u64,
    name: &str,
    values: &[&str],
) -> Option<&'a Series> {
    known.get(&key)?.iter().find(|series| {
        series.name == name
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
