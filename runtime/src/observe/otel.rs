//! [`OtelObserver`]: the events as metrics, through the OpenTelemetry API.

use std::fmt;

use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};
use opentelemetry::KeyValue;

use super::metric::{measure, Kind, Value, METRICS, SECONDS_BUCKETS};
use super::{Event, Observer};

/// An observer that turns events into the metrics of [`METRICS`] on an
/// OpenTelemetry [`Meter`]: the API only, so the app chooses the SDK and
/// the exporter. Feature `otel`.
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
/// use timebox::observe::OtelObserver;
///
/// let meter = opentelemetry::global::meter("my-service");
/// let config = Config::default().observed_by(OtelObserver::new(&meter));
/// # let _ = config;
/// ```
pub struct OtelObserver {
    /// One instrument for each row of [`METRICS`], in its order.
    instruments: Vec<Instrument>,
}

enum Instrument {
    Counter(Counter<u64>),
    Gauge(Gauge<f64>),
    Histogram(Histogram<f64>),
}

impl OtelObserver {
    /// An observer whose instruments are made on `meter`, with the names,
    /// units and descriptions of [`METRICS`]. The histograms, all in
    /// seconds, get the bucket boundaries [`SECONDS_BUCKETS`] (those of
    /// OpenTelemetry's HTTP semantic conventions, 5 ms to 10 s, then 30 s,
    /// 1, 2 and 5 min) instead of the SDK's defaults, which are for
    /// milliseconds: every budget and duration under 5 s would fall in one
    /// bucket. A view in the app's SDK can change them.
    #[must_use]
    pub fn new(meter: &Meter) -> Self {
        let instruments = METRICS
            .iter()
            .map(|metric| {
                let (name, description) = (metric.name, metric.description);
                let unit = metric.unit.unwrap_or("{count}");
                match metric.kind {
                    Kind::Counter => Instrument::Counter(
                        meter
                            .u64_counter(name)
                            .with_unit(unit)
                            .with_description(description)
                            .build(),
                    ),
                    Kind::Gauge => Instrument::Gauge(
                        meter
                            .f64_gauge(name)
                            .with_unit(unit)
                            .with_description(description)
                            .build(),
                    ),
                    Kind::Histogram => Instrument::Histogram(
                        meter
                            .f64_histogram(name)
                            .with_unit(unit)
                            .with_description(description)
                            .with_boundaries(SECONDS_BUCKETS.to_vec())
                            .build(),
                    ),
                }
            })
            .collect();
        Self { instruments }
    }
}

impl Observer for OtelObserver {
    fn on_event(&self, event: &Event) {
        measure(event, |metric, value, attributes| {
            let Some(index) = METRICS.iter().position(|row| row.name == metric.name) else {
                return;
            };
            let attributes: Vec<KeyValue> = metric
                .attributes
                .iter()
                .zip(attributes)
                .map(|(key, value)| KeyValue::new(*key, (*value).to_owned()))
                .collect();
            match (&self.instruments[index], value) {
                (Instrument::Counter(counter), Value::Increment) => counter.add(1, &attributes),
                (Instrument::Gauge(gauge), Value::Set(value)) => gauge.record(value, &attributes),
                (Instrument::Histogram(histogram), Value::Record(value)) => {
                    histogram.record(value, &attributes);
                }
                // The table gives each metric one kind and `measure` moves it
                // only as that kind.
                _ => {}
            }
        });
    }
}

impl fmt::Debug for OtelObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelObserver")
            .field("instruments", &self.instruments.len())
            .finish()
    }
}
