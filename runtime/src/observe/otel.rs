//! [`OtelObserver`]: the events as metrics, through the OpenTelemetry API.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry::metrics::{AsyncInstrument, Counter, Histogram, Meter};
use opentelemetry::KeyValue;

use super::metric::{measure, Kind, Value, METRICS, SECONDS_BUCKETS};
use super::{Event, Observer};

/// An observer that turns events into the metrics of [`METRICS`] on an
/// OpenTelemetry [`Meter`]: the API only, so the app chooses the SDK and
/// the exporter. Feature `otel`.
///
/// Take the meter after the app has set its meter provider
/// (`opentelemetry::global::set_meter_provider`): a meter taken from the
/// global provider before that is a no-op for good, and so are the
/// instruments made on it. The two gauges (`timebox.breaker.state`,
/// `timebox.retry_budget.tokens`) are observable gauges that report each
/// series' last value at every collection, so an open breaker shows as
/// open also to an exporter that asks for deltas.
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
    /// The gauge's last value of each series, which its callback reports.
    Gauge(Arc<LastValues>),
    Histogram(Histogram<f64>),
}

/// The last value set of each series of a gauge (by its attributes'
/// values, in the table's order), reported at every collection by an
/// observable gauge. A synchronous gauge would report a series only in
/// the intervals it was set in when the exporter asks for deltas: an
/// open breaker would show for one interval, then not at all until it
/// moved again. The series are as bounded as the labels.
#[derive(Default)]
struct LastValues(Mutex<HashMap<Vec<String>, f64>>);

impl LastValues {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<String>, f64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, values: &[&str], value: f64) {
        let key = values.iter().map(|value| (*value).to_owned()).collect();
        self.lock().insert(key, value);
    }

    /// Reports every series to `gauge`, its attributes named by `keys`.
    fn report(&self, keys: &[&'static str], gauge: &dyn AsyncInstrument<f64>) {
        for (values, value) in self.lock().iter() {
            let attributes: Vec<KeyValue> = keys
                .iter()
                .zip(values)
                .map(|(key, value)| KeyValue::new(*key, value.clone()))
                .collect();
            gauge.observe(*value, &attributes);
        }
    }
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
                    Kind::Gauge => {
                        let last = Arc::new(LastValues::default());
                        let (reported, keys) = (Arc::downgrade(&last), metric.attributes);
                        // The instrument lives as long as the meter
                        // provider, with its callback; the values only
                        // as long as this observer, so a dropped one
                        // reports nothing.
                        meter
                            .f64_observable_gauge(name)
                            .with_unit(unit)
                            .with_description(description)
                            .with_callback(move |gauge| {
                                if let Some(last) = reported.upgrade() {
                                    last.report(keys, gauge);
                                }
                            })
                            .build();
                        Instrument::Gauge(last)
                    }
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
            if let (Instrument::Gauge(last), Value::Set(value)) = (&self.instruments[index], value)
            {
                last.set(attributes, value);
                return;
            }
            let attributes: Vec<KeyValue> = metric
                .attributes
                .iter()
                .zip(attributes)
                .map(|(key, value)| KeyValue::new(*key, (*value).to_owned()))
                .collect();
            match (&self.instruments[index], value) {
                (Instrument::Counter(counter), Value::Increment) => counter.add(1, &attributes),
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
