//! [`MetricsObserver`]: the events as metrics, through the `metrics` facade.

use metrics::{Label, Unit};

use super::metric::{measure, Kind, Value, METRICS};
use super::{Event, Observer};

/// An observer that turns events into the metrics of [`METRICS`] through
/// the [`metrics`] facade, so any recorder shows them
/// (`metrics-exporter-prometheus`, StatsD, ..).
///
/// It records into the recorder installed when each event comes (the
/// global one, or a thread's local one); [`MetricsObserver::new`] describes
/// every metric to the recorder installed then, so install the recorder
/// first.
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
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct MetricsObserver;

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
        Self
    }
}

impl Default for MetricsObserver {
    fn default() -> Self {
        Self::new()
    }
}

impl Observer for MetricsObserver {
    fn on_event(&self, event: &Event) {
        measure(event, |metric, value, attributes| {
            let labels: Vec<Label> = metric
                .attributes
                .iter()
                .zip(attributes)
                .map(|(key, value)| Label::new(*key, (*value).to_owned()))
                .collect();
            let name = metric.name;
            match value {
                Value::Increment => metrics::counter!(name, labels).increment(1),
                Value::Set(value) => metrics::gauge!(name, labels).set(value),
                Value::Record(value) => metrics::histogram!(name, labels).record(value),
            }
        });
    }
}
