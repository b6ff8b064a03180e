//! The fleet example's three hops over real loopback sockets.

use std::time::{Duration, Instant};

use timebox::config::Config;
use timebox::observe::{Event, Recording, Stage};
use timebox_fleet::front::RESERVE;
use timebox_fleet::pb::ForwardRequest;
use timebox_fleet::relay::Relay;
use timebox_fleet::Fleet;

/// Room above the front's 2 s deadline for a busy machine.
const ROOM: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hop_answers_and_each_is_given_less_time_than_the_one_before() {
    let fleet = Fleet::start(&Config::default())
        .await
        .expect("the fleet starts");
    let response = reqwest::get(format!("http://{}/front", fleet.front))
        .await
        .expect("the front answers");
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let ms: Vec<i64> = body
        .lines()
        .map(|line| {
            line.split_whitespace()
                .nth(1)
                .and_then(|ms| ms.parse().ok())
                .unwrap_or_else(|| panic!("a hop's milliseconds in {line:?}"))
        })
        .collect();
    let [front, relay, leaf] = ms[..] else {
        panic!("three hops in {body:?}");
    };
    assert!(front <= 2000 && front > 1000, "{body}");
    let reserve = i64::try_from(RESERVE.as_millis()).unwrap();
    assert!(
        relay <= front - reserve,
        "the relay is called with the front's reserve kept: {body}"
    );
    assert!(leaf <= relay && leaf > 0, "{body}");
    assert!(body.contains("(HTTP 200)"), "{body}");
    assert_eq!(fleet.relay_state.dropped(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_leaf_makes_the_front_answer_504_in_time_and_the_relay_drops_its_handler() {
    let recording = Recording::new();
    let fleet = Fleet::start(&Config::default().observed_by(recording.clone()))
        .await
        .expect("the fleet starts");
    fleet.leaf_state.set_slow(true);
    let start = Instant::now();
    let response = reqwest::get(format!("http://{}/front", fleet.front))
        .await
        .expect("the front answers");
    let elapsed = start.elapsed();
    assert_eq!(response.status(), 504, "{:?}", response.text().await);
    assert!(elapsed < Duration::from_secs(2) + ROOM, "{elapsed:?}");
    let start = Instant::now();
    while fleet.relay_state.dropped() == 0 && start.elapsed() < ROOM {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        fleet.relay_state.dropped(),
        1,
        "the relay's handler was dropped"
    );
    // By the relay's server layer (whose events name a method the config
    // does not as `other`), at the relay's deadline, while its handler
    // waited on the leaf.
    let relay_timeouts = recording
        .events()
        .into_iter()
        .filter(|event| {
            matches!(
                event,
                Event::DeadlineExceeded {
                    stage: Stage::Outbound,
                    route: Some(route),
                } if &**route == "other"
            )
        })
        .count();
    assert_eq!(relay_timeouts, 1, "{:?}", recording.events());
}

/// A leaf that answers something other than the milliseconds it was given
/// is an error that quotes it, not a leaf that received no deadline.
#[tokio::test]
async fn a_leaf_answer_that_is_no_deadline_is_an_error_quoting_it() {
    use timebox_fleet::pb::relay_server::Relay as _;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let leaf = axum::Router::new().route("/leaf", axum::routing::get(|| async { "soon" }));
    tokio::spawn(async move { axum::serve(listener, leaf).await });
    let relay = Relay::new(&Config::default(), format!("http://{addr}/leaf"));
    let status = relay
        .forward(tonic::Request::new(ForwardRequest {}))
        .await
        .expect_err("the relay fails the call");
    assert_eq!(status.code(), tonic::Code::Internal);
    assert_eq!(
        status.message(),
        "the leaf answered \"soon\", not the milliseconds it was given"
    );
}
