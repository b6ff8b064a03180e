//! The two metric sinks (DESIGN O3) register the same names, kinds and
//! units, those of the metric table, and keep every label set bounded.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{
    InMemoryMetricExporter, InMemoryMetricExporterBuilder, PeriodicReader, SdkMeterProvider,
    Temporality,
};
use timebox::breaker::BreakerState;
use timebox::client::{Attempt, AttemptKind};
use timebox::config::Config;
use timebox::observe::{
    BreakerCallOutcome, CallOutcome, DeadlineSource, Event, Kind, MetricsObserver, Observer,
    OtelObserver, PhaseOutcome, Recording, ShedReason, ShutdownPhase, SkipReason, Stage, METRICS,
};
use timebox::registry::CancelReason;
use timebox::sim::Sim;
use timebox::sim_test;
use timebox::watchdog::TimeoutKind;

/// `(name, kind, unit)`, as both sinks must show them.
type Registered = BTreeSet<(String, &'static str, String)>;

/// One event for every metric of the table.
fn one_of_each() -> Vec<Event> {
    let host: timebox::observe::Label = "up:80".into();
    let route = Some("/users/{id}".into());
    vec![
        Event::DeadlineSet {
            source: DeadlineSource::Global,
            budget: Duration::from_secs(2),
            route: route.clone(),
        },
        Event::DeadlineExceeded {
            stage: Stage::Handler,
            route: route.clone(),
        },
        Event::AttemptFinished {
            host: host.clone(),
            attempt: Attempt::new(1, AttemptKind::First),
            outcome: CallOutcome::Status(503),
        },
        Event::RetrySkipped {
            host: host.clone(),
            reason: SkipReason::Budget,
        },
        Event::CallFinished {
            host: host.clone(),
            outcome: CallOutcome::Status(503),
            duration: Duration::from_millis(20),
        },
        Event::BudgetTokens {
            host: host.clone(),
            tokens: 10.0,
        },
        Event::BreakerTransition {
            host: host.clone(),
            from: BreakerState::Closed,
            to: BreakerState::Open,
        },
        Event::BreakerCall {
            host,
            outcome: BreakerCallOutcome::Failure,
        },
        Event::StreamTimeout {
            kind: TimeoutKind::Inactivity,
            route: route.clone(),
        },
        Event::StreamFirstItem {
            route: route.clone(),
            after: Duration::from_millis(200),
        },
        Event::RequestCancelled {
            reason: CancelReason::Timeout(TimeoutKind::Inactivity),
        },
        Event::ShutdownPhase {
            phase: ShutdownPhase::Grace,
            duration: Duration::from_secs(3),
            outcome: PhaseOutcome::Drained,
        },
        Event::RequestShed {
            reason: ShedReason::ShuttingDown,
            route,
        },
    ]
}

/// One registration: the name, the kind and the labels.
type Registration = (String, &'static str, Vec<(String, String)>);

/// What a `metrics` recorder was told: descriptions and registrations.
#[derive(Default)]
struct Told {
    units: Mutex<Vec<(String, &'static str, Option<Unit>)>>,
    registered: Mutex<Vec<Registration>>,
}

struct TellingRecorder(Arc<Told>);

impl TellingRecorder {
    fn describe(&self, key: KeyName, kind: &'static str, unit: Option<Unit>) {
        let name = key.as_str().to_owned();
        self.0.units.lock().unwrap().push((name, kind, unit));
    }

    fn register(&self, key: &Key, kind: &'static str) {
        let labels = key
            .labels()
            .map(|label| (label.key().to_owned(), label.value().to_owned()))
            .collect();
        let name = key.name().to_owned();
        self.0.registered.lock().unwrap().push((name, kind, labels));
    }
}

impl Recorder for TellingRecorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, "counter", unit);
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, "gauge", unit);
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, "histogram", unit);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.register(key, "counter");
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.register(key, "gauge");
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.register(key, "histogram");
        Histogram::noop()
    }
}

/// What the `metrics` sink described and recorded for `events`.
fn through_metrics(events: &[Event]) -> (Registered, Told) {
    let told = Arc::new(Told::default());
    let recorder = TellingRecorder(Arc::clone(&told));
    metrics::with_local_recorder(&recorder, || {
        let observer = MetricsObserver::new();
        for event in events {
            observer.on_event(event);
        }
    });
    drop(recorder);
    let told = Arc::into_inner(told).expect("the recorder is gone");
    let units = told.units.lock().unwrap().clone();
    let registered = told
        .registered
        .lock()
        .unwrap()
        .iter()
        .map(|(name, kind, _)| {
            let unit = units
                .iter()
                .find(|(described, _, _)| described == name)
                .and_then(|(_, _, unit)| *unit)
                .map_or("", |unit| match unit {
                    Unit::Seconds => "s",
                    _ => "",
                });
            (name.clone(), *kind, unit.to_owned())
        })
        .collect();
    (registered, told)
}

/// What the OpenTelemetry sink exported for `events`.
fn through_otel(events: &[Event]) -> Registered {
    exported_through_otel(events)
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .map(|metric| {
            let kind = match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(_)) => "counter",
                AggregatedMetrics::F64(MetricData::Gauge(_)) => "gauge",
                AggregatedMetrics::F64(MetricData::Histogram(_)) => "histogram",
                _ => "other",
            };
            let unit = match metric.unit() {
                "{count}" => "",
                unit => unit,
            };
            (metric.name().to_owned(), kind, unit.to_owned())
        })
        .collect()
}

/// What an OpenTelemetry SDK exports once the OTel sink was told `events`.
fn exported_through_otel(events: &[Event]) -> Vec<ResourceMetrics> {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let observer = OtelObserver::new(&provider.meter("timebox-test"));
    for event in events {
        observer.on_event(event);
    }
    provider.force_flush().expect("the metrics are exported");
    exporter.get_finished_metrics().expect("exported metrics")
}

fn table() -> Registered {
    METRICS
        .iter()
        .map(|metric| {
            let kind = match metric.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
                other => panic!("a metric kind this table does not know: {other:?}"),
            };
            (
                metric.name.to_owned(),
                kind,
                metric.unit.unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// O3: the table both sinks read is the design's, row by row, as written
/// there (the sinks are checked against the table, so a row that drifted
/// from the design would drift in both).
#[test]
fn the_table_is_the_designs() {
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    );
    let design: [Row; 14] = [
        (
            "timebox.deadline.remaining",
            "histogram",
            "s",
            &["source", "route"],
        ),
        (
            "timebox.deadline.exceeded",
            "counter",
            "",
            &["stage", "route"],
        ),
        (
            "timebox.client.attempts",
            "counter",
            "",
            &["host", "kind", "outcome"],
        ),
        (
            "timebox.client.retry.skipped",
            "counter",
            "",
            &["host", "reason"],
        ),
        (
            "timebox.client.call.duration",
            "histogram",
            "s",
            &["host", "outcome"],
        ),
        ("timebox.retry_budget.tokens", "gauge", "", &["host"]),
        ("timebox.breaker.state", "gauge", "", &["host"]),
        (
            "timebox.breaker.transitions",
            "counter",
            "",
            &["host", "from", "to"],
        ),
        ("timebox.breaker.calls", "counter", "", &["host", "outcome"]),
        ("timebox.stream.timeouts", "counter", "", &["kind", "route"]),
        (
            "timebox.stream.first_item.duration",
            "histogram",
            "s",
            &["route"],
        ),
        ("timebox.requests.cancelled", "counter", "", &["reason"]),
        (
            "timebox.shutdown.phase.duration",
            "histogram",
            "s",
            &["phase", "outcome"],
        ),
        ("timebox.server.shed", "counter", "", &["reason", "route"]),
    ];
    let ours: Vec<Row> = METRICS
        .iter()
        .map(|row| {
            (
                row.name,
                row.kind.as_str(),
                row.unit.unwrap_or(""),
                row.attributes,
            )
        })
        .collect();
    assert_eq!(ours, design);
}

#[test]
fn both_sinks_register_the_tables_names_kinds_and_units() {
    let events = one_of_each();
    let (metrics, told) = through_metrics(&events);
    let otel = through_otel(&events);
    assert_eq!(table().len(), 14);
    assert_eq!(metrics, table());
    assert_eq!(otel, table());
    // Every metric is described once, at install.
    assert_eq!(told.units.lock().unwrap().len(), METRICS.len());
}

#[test]
fn each_metric_carries_the_tables_attributes() {
    let (_, told) = through_metrics(&one_of_each());
    let registered = told.registered.lock().unwrap().clone();
    for (name, _, labels) in &registered {
        let row = METRICS.iter().find(|row| row.name == name).unwrap();
        let keys: Vec<_> = labels.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, row.attributes, "{name}");
    }
    // The values go with their keys.
    let labels_of = |name: &str| {
        registered
            .iter()
            .find(|(registered, _, _)| registered == name)
            .map(|(_, _, labels)| labels.clone())
            .unwrap()
    };
    let pairs = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    };
    assert_eq!(
        labels_of("timebox.client.attempts"),
        pairs(&[("host", "up:80"), ("kind", "first"), ("outcome", "5xx")])
    );
    assert_eq!(
        labels_of("timebox.deadline.remaining"),
        pairs(&[("source", "global"), ("route", "/users/{id}")])
    );
    assert_eq!(
        labels_of("timebox.breaker.transitions"),
        pairs(&[("host", "up:80"), ("from", "closed"), ("to", "open")])
    );
}

#[sim_test]
async fn two_thousand_hosts_give_at_most_max_hosts_host_values(sim: Sim) {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.http.client.retry_budget.max_hosts = 16;
    config.http.client.max_retries = 0;
    let client = sim.client_with(&config);
    // None of these hosts is on the simulated network: each call fails to
    // connect, and is told.
    for n in 0..2_000 {
        let _ = client.get(format!("http://host-{n}/")).send().await;
    }
    let hosts: BTreeSet<String> = recording
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::AttemptFinished { host, .. } | Event::CallFinished { host, .. } => {
                Some(host.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(hosts.len(), 16, "{hosts:?}");
    assert!(hosts.contains("other"));
    assert!(hosts.contains("host-0:80"));
}

#[sim_test]
async fn hosts_past_max_hosts_get_no_breaker(sim: Sim) {
    // With the budget off too: the breakers' own table is bounded, not
    // only the budget's.
    for budget in [true, false] {
        let recording = Recording::new();
        let mut config = Config::default().observed_by(recording.clone());
        config.http.client.retry_budget.max_hosts = 16;
        config.http.client.retry_budget.enabled = budget;
        config.http.client.max_retries = 0;
        // One failed call opens a host's breaker, if it has one.
        config.breaker.minimum_sample_count = 1;
        let client = sim.client_with(&config);
        for n in 0..200 {
            let _ = client.get(format!("http://host-{n}/")).send().await;
        }
        let opened = recording
            .events()
            .iter()
            .filter(|event| matches!(event, Event::BreakerTransition { .. }))
            .count();
        assert_eq!(opened, 16, "budget enabled: {budget}");
    }
}

#[sim_test]
async fn a_host_the_budget_table_refused_gets_no_breaker_though_the_breakers_have_room(sim: Sim) {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.http.client.retry_budget.max_hosts = 1;
    config.http.client.max_retries = 0;
    config.breaker.minimum_sample_count = 1;
    let client = sim.client_with(&config);
    // A lookup takes the one bucket, and makes no breaker.
    assert!(client
        .budgets()
        .for_uri(&"http://known/".parse().unwrap())
        .is_some());
    // `unknown` is not on the simulated network: its call fails to
    // connect, which would open a breaker.
    let _ = client.get("http://unknown/").send().await;
    let breakers: Vec<Event> = recording
        .events()
        .into_iter()
        .filter(|event| {
            matches!(
                event,
                Event::BreakerTransition { .. } | Event::BreakerCall { .. }
            )
        })
        .collect();
    assert!(breakers.is_empty(), "{breakers:?}");
    assert_eq!(client.budgets().unbudgeted_hosts(), 1);
}

#[tokio::test(start_paused = true)]
async fn raw_paths_never_appear_as_routes() {
    let recording = Recording::new();
    let mut config = Config::default().observed_by(recording.clone());
    config.server.timeouts.request_timeout_ms = Some(1_000);
    let app = axum::Router::new()
        .route(
            "/users/{id}",
            axum::routing::get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .layer(timebox::server::TimeboxLayer::new(&config));
    for id in 0..50 {
        let path = format!("/users/{id}");
        let response =
            tower::ServiceExt::oneshot(app.clone(), support::http::request("GET", &path))
                .await
                .unwrap();
        assert_eq!(response.status(), 503);
    }
    let routes: BTreeSet<String> = recording
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::DeadlineSet { route, .. } | Event::DeadlineExceeded { route, .. } => {
                route.as_deref().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(routes, BTreeSet::from(["/users/{id}".to_owned()]));
}

/// What [`one_of_each`] moves each metric by: counters by one, gauges to
/// the value, histograms by the duration in seconds (the table's unit), in
/// the order of the names.
const MOVED_BY_ONE_OF_EACH: [(&str, f64); 14] = [
    ("timebox.breaker.calls", 1.0),
    ("timebox.breaker.state", 2.0), // open
    ("timebox.breaker.transitions", 1.0),
    ("timebox.client.attempts", 1.0),
    ("timebox.client.call.duration", 0.02),
    ("timebox.client.retry.skipped", 1.0),
    ("timebox.deadline.exceeded", 1.0),
    ("timebox.deadline.remaining", 2.0),
    ("timebox.requests.cancelled", 1.0),
    ("timebox.retry_budget.tokens", 10.0),
    ("timebox.server.shed", 1.0),
    ("timebox.shutdown.phase.duration", 3.0),
    ("timebox.stream.first_item.duration", 0.2),
    ("timebox.stream.timeouts", 1.0),
];

/// Asserts that `moved`, sorted by name, is [`MOVED_BY_ONE_OF_EACH`].
fn assert_moved_as_told(sink: &str, mut moved: Vec<(String, f64)>) {
    moved.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(moved.len(), MOVED_BY_ONE_OF_EACH.len(), "{sink}: {moved:?}");
    for ((name, value), (want_name, want)) in moved.iter().zip(MOVED_BY_ONE_OF_EACH) {
        assert_eq!(name, want_name, "{sink}");
        assert!(
            (value - want).abs() < 1e-9,
            "{sink}: {name} is {value}, not {want}"
        );
    }
}

/// O3: the `metrics` sink moves each metric by what its event says.
#[test]
fn each_event_moves_its_metric_by_its_value_through_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let observer = MetricsObserver::new();
        for event in one_of_each() {
            observer.on_event(&event);
        }
    });
    let moved = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let name = key.key().name().to_owned();
            let value = match value {
                DebugValue::Counter(count) => count as f64,
                DebugValue::Gauge(value) => value.into_inner(),
                DebugValue::Histogram(values) => {
                    assert_eq!(values.len(), 1, "{name}");
                    values[0].into_inner()
                }
            };
            (name, value)
        })
        .collect();
    assert_moved_as_told("metrics", moved);
}

/// O3: the OpenTelemetry sink moves each metric by what its event says.
#[test]
fn each_event_moves_its_metric_by_its_value_through_otel() {
    let values: Vec<(String, f64)> = exported_through_otel(&one_of_each())
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .map(|metric| {
            let value = match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    let points: Vec<u64> = sum.data_points().map(|point| point.value()).collect();
                    assert_eq!(points.len(), 1, "{}", metric.name());
                    points[0] as f64
                }
                AggregatedMetrics::F64(MetricData::Gauge(gauge)) => {
                    let points: Vec<f64> = gauge.data_points().map(|point| point.value()).collect();
                    assert_eq!(points.len(), 1, "{}", metric.name());
                    points[0]
                }
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                    let points: Vec<(u64, f64)> = histogram
                        .data_points()
                        .map(|point| (point.count(), point.sum()))
                        .collect();
                    assert_eq!(points.len(), 1, "{}", metric.name());
                    assert_eq!(points[0].0, 1, "{}", metric.name());
                    points[0].1
                }
                _ => panic!("{} has a kind the table has not", metric.name()),
            };
            (metric.name().to_owned(), value)
        })
        .collect();
    assert_moved_as_told("otel", values);
}

/// O3: the OpenTelemetry histograms are in seconds, so their buckets are
/// too: a 20 ms and a 400 ms call land in different buckets, and a 2 s
/// deadline in neither of theirs.
#[test]
fn otel_histograms_have_buckets_in_seconds() {
    let host: timebox::observe::Label = "up:80".into();
    let calls: Vec<Event> = [20, 400, 2000]
        .map(|millis| Event::CallFinished {
            host: host.clone(),
            outcome: CallOutcome::Status(200),
            duration: Duration::from_millis(millis),
        })
        .into();
    let exported = exported_through_otel(&calls);
    let histogram = exported
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .find(|metric| metric.name() == "timebox.client.call.duration")
        .expect("the call duration is exported");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = histogram.data() else {
        panic!("the call duration is a histogram");
    };
    let point = histogram.data_points().next().expect("one series of calls");
    let bounds: Vec<f64> = point.bounds().collect();
    assert_eq!(bounds.first(), Some(&0.005));
    assert_eq!(bounds.last(), Some(&300.0));
    let filled: Vec<usize> = point
        .bucket_counts()
        .enumerate()
        .filter(|(_, count)| *count > 0)
        .map(|(bucket, _)| bucket)
        .collect();
    assert_eq!(
        filled.len(),
        3,
        "each call in a bucket of its own: {bounds:?}"
    );
}

/// O3: an OpenTelemetry gauge holds its value between the events that
/// set it, as the `metrics` sink's does, also for an exporter that asks
/// for deltas (which report only the series recorded in each interval).
#[test]
fn otel_gauges_hold_their_value_between_changes_under_delta_temporality() {
    let exporter = InMemoryMetricExporterBuilder::new()
        .with_temporality(Temporality::Delta)
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let observer = OtelObserver::new(&provider.meter("timebox-test"));
    let host: timebox::observe::Label = "up:80".into();
    observer.on_event(&Event::BreakerTransition {
        host: host.clone(),
        from: BreakerState::Closed,
        to: BreakerState::Open,
    });
    observer.on_event(&Event::BudgetTokens { host, tokens: 7.5 });
    // Two collections, with no event in the second interval.
    provider.force_flush().expect("the metrics are exported");
    exporter.reset();
    provider.force_flush().expect("the metrics are exported");
    let exported = exporter.get_finished_metrics().expect("exported metrics");
    let gauges: Vec<(String, Vec<(String, f64)>)> = exported
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .filter_map(|metric| match metric.data() {
            AggregatedMetrics::F64(MetricData::Gauge(gauge)) => Some((
                metric.name().to_owned(),
                gauge
                    .data_points()
                    .map(|point| {
                        let host = point
                            .attributes()
                            .map(|kv| format!("{}={}", kv.key, kv.value))
                            .collect();
                        (host, point.value())
                    })
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        gauges,
        [
            (
                "timebox.retry_budget.tokens".to_owned(),
                vec![("host=up:80".to_owned(), 7.5)]
            ),
            (
                "timebox.breaker.state".to_owned(),
                vec![("host=up:80".to_owned(), 2.0)]
            ),
        ]
    );
}

/// A dropped OpenTelemetry observer's gauges report nothing more: an
/// app rebuilt with a new observer does not keep exporting the old one's
/// open breakers.
#[test]
fn a_dropped_otel_observers_gauges_report_nothing() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let meter = provider.meter("timebox-test");
    let breaker_states = || {
        provider.force_flush().expect("the metrics are exported");
        let states: Vec<f64> = exporter
            .get_finished_metrics()
            .expect("exported metrics")
            .iter()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .filter(|metric| metric.name() == "timebox.breaker.state")
            .flat_map(|metric| match metric.data() {
                AggregatedMetrics::F64(MetricData::Gauge(gauge)) => gauge
                    .data_points()
                    .map(|point| point.value())
                    .collect::<Vec<f64>>(),
                _ => panic!("the state is a gauge"),
            })
            .collect();
        exporter.reset();
        states
    };
    let open = |observer: &OtelObserver| {
        observer.on_event(&Event::BreakerTransition {
            host: "up:80".into(),
            from: BreakerState::Closed,
            to: BreakerState::Open,
        });
    };
    let first = OtelObserver::new(&meter);
    open(&first);
    assert_eq!(breaker_states(), [2.0]);
    drop(first);
    assert_eq!(breaker_states(), [] as [f64; 0]);
    // An observer made after it on the same meter reports its own.
    let second = OtelObserver::new(&meter);
    open(&second);
    assert_eq!(breaker_states(), [2.0]);
}
