//! Admission (DESIGN §14, A1–A2): work that cannot finish in time never
//! starts, and requests over the concurrency limit wait in a queue that
//! CoDel keeps short. Every scenario runs in virtual time.

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::Router;
use http::{Request, StatusCode};
use timebox::config::{Concurrency, Config, DeadlineCheck};
use timebox::server::TimeboxLayer;
use timebox::sim::{Sim, SimApp};
use timebox::{get, post, routes, sim_test};
use tokio::time::{sleep, Instant};
use tower::{Service, ServiceExt};

use support::http::{get_with_deadline_header, request, retry_after_secs, text};
use support::observe::lines;
use support::time::{MS, SECS};

/// Runs a request's handler for 40 ms.
#[get("/work", timeout_ms = 1000)]
async fn work() -> &'static str {
    sleep(MS(40)).await;
    "done"
}

/// Needs 50 ms, as its attribute says, so it refuses shorter deadlines
/// from its first request on.
#[get("/fixed", timeout_ms = 1000, min_budget_ms = 50)]
async fn fixed() -> &'static str {
    sleep(MS(1)).await;
    "done"
}

/// A route with no deadline, whatever the inbound header says.
#[get("/items", timeout = "off")]
async fn list_items() -> &'static str {
    "items"
}

fn config(sim: &Sim, check: DeadlineCheck) -> Config {
    let mut config = sim.config();
    config.server.timeouts.accept_deadline_header = true;
    config.server.admission.deadline_check = check;
    config
}

/// The deadline check enforced, behind a concurrency limit of one, with
/// a 30 s global deadline.
fn enforced_behind_one_slot(sim: &Sim) -> Config {
    let mut config = config(sim, DeadlineCheck::Enforce);
    config.server.admission.concurrency =
        Concurrency::Fixed(std::num::NonZeroUsize::new(1).unwrap());
    config.server.timeouts.request_timeout_ms = Some(30_000);
    config
}

fn app(sim: &Sim, config: &Config) -> SimApp {
    sim.app(routes![work, fixed].into_router(config))
}

/// Teaches `/work` its 40 ms median: 100 successes.
async fn warm_up(app: &SimApp) {
    for _ in 0..100 {
        let response = app.request(request("GET", "/work")).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}

/// The last `n` events told, oldest first.
fn last(sim: &Sim, n: usize) -> Vec<String> {
    let lines = lines(&sim.observed());
    lines[lines.len().saturating_sub(n)..].to_vec()
}

fn sheds(sim: &Sim) -> Vec<String> {
    lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("request_shed"))
        .collect()
}

#[sim_test]
async fn a_10ms_budget_against_a_40ms_median_is_refused_with_504_when_enforced(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Enforce));
    warm_up(&app).await;
    let before = Instant::now();
    let response = app.request(get_with_deadline_header("/work", "10")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(Instant::now(), before, "refused before the handler ran");
    // O1: the refused request's deadline was set, and told so first.
    assert_eq!(
        last(&sim, 2),
        [
            "deadline_set source=x-timebox-deadline-ms budget=10ms route=/work",
            "request_shed reason=deadline_too_short route=/work",
        ]
    );
    assert!(response.headers().get("retry-after").is_none());
    assert_eq!(response.headers()["x-timebox-shed"], "deadline_too_short");
    let body: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(body["type"], "urn:timebox:deadline-too-short");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("10 ms left") && detail.contains("takes 40 ms"),
        "{detail}"
    );
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short route=/work"]
    );
}

/// Fails after 40 ms.
#[get("/failing", timeout_ms = 1000)]
async fn failing() -> StatusCode {
    sleep(MS(40)).await;
    StatusCode::INTERNAL_SERVER_ERROR
}

/// A1 learns from successful requests only: a route whose requests all
/// fail has no median, so a short deadline is not refused.
#[sim_test]
async fn failed_requests_teach_the_route_no_median(sim: Sim) {
    let app = sim.app(routes![failing].into_router(&config(&sim, DeadlineCheck::Enforce)));
    for _ in 0..100 {
        let response = app.request(request("GET", "/failing")).await;
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
    let response = app
        .request(get_with_deadline_header("/failing", "10"))
        .await;
    // Not refused: admitted, and cut at its 10 ms deadline.
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(sheds(&sim).is_empty(), "{:?}", sheds(&sim));
}

#[sim_test]
async fn in_dark_mode_the_same_request_is_counted_and_served(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Dark));
    warm_up(&app).await;
    let response = app.request(get_with_deadline_header("/work", "10")).await;
    // Served, and cut at its 10 ms deadline as ever.
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().get("x-timebox-shed").is_none());
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short_dark route=/work"]
    );
}

#[sim_test]
async fn no_request_is_refused_before_a_hundred_successes(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Enforce));
    for _ in 0..99 {
        app.request(request("GET", "/work")).await;
    }
    let response = app.request(get_with_deadline_header("/work", "10")).await;
    assert_eq!(
        response.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "served and timed out"
    );
    assert_eq!(sheds(&sim), Vec::<String>::new());
}

#[sim_test]
async fn a_route_min_budget_refuses_from_the_first_request(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Enforce));
    // The cap lets a refusal through only once there are five requests.
    for _ in 0..4 {
        app.request(request("GET", "/fixed")).await;
    }
    // Exactly the route's 50 ms is enough.
    let response = app.request(get_with_deadline_header("/fixed", "50")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = app.request(get_with_deadline_header("/fixed", "30")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    let detail = text(response).await;
    assert!(
        detail.contains("30 ms left") && detail.contains("takes 50 ms (its `min_budget_ms`)"),
        "{detail}"
    );
    let response = app.request(get_with_deadline_header("/fixed", "60")).await;
    assert_eq!(response.status(), StatusCode::OK);
}

/// Needs 50 ms and inherits the global deadline, which the macro cannot see.
#[get("/inherits", min_budget_ms = 50)]
async fn inherits() -> &'static str {
    "done"
}

/// A1: a `min_budget_ms` that the deadline a route inherits cannot cover is
/// said at startup, naming both keys: the route's check would find every
/// request too short. A deadline that covers it says nothing.
#[test]
fn a_min_budget_its_inherited_deadline_cannot_cover_is_warned_about_at_startup() {
    for (global_ms, warned) in [(30, true), (50, true), (1000, false)] {
        let (logs, _guard) = support::logs::Logs::capture();
        let mut config = Config::default();
        config.server.timeouts.request_timeout_ms = Some(global_ms);
        let _router: Router = routes![inherits].into_router(&config);
        if !warned {
            let lines = logs.lines_with("min_budget_ms");
            assert_eq!(lines, Vec::<String>::new(), "global {global_ms} ms");
            continue;
        }
        logs.one_line_with(
            "min_budget_ms",
            &[
                "WARN",
                "method=GET",
                r#"route="/inherits""#,
                "min_budget_ms=50",
                &format!("deadline_ms={global_ms}"),
                "`server.timeouts.request_timeout_ms`",
            ],
        );
    }
}

#[sim_test]
async fn the_reject_cap_holds_at_a_fifth_over_ten_seconds(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Enforce));
    // Every request is too short for `/fixed`: one each 100 ms for 10 s.
    let mut refused = 0;
    for _ in 0..100 {
        let response = app.request(get_with_deadline_header("/fixed", "10")).await;
        if response.status() == StatusCode::GATEWAY_TIMEOUT {
            refused += 1;
        }
        sleep(MS(100)).await;
    }
    assert_eq!(refused, 20);
}

/// `count` requests for `/fixed` at once with `header` as their deadline;
/// how many were refused.
async fn refused_of(app: &SimApp, count: usize, header: &str) -> usize {
    let mut refused = 0;
    for _ in 0..count {
        let response = app
            .request(get_with_deadline_header("/fixed", header))
            .await;
        if response.status() == StatusCode::GATEWAY_TIMEOUT {
            refused += 1;
        }
    }
    refused
}

/// The cap's window is ten seconds, not less and not more: requests served
/// five seconds before a burst make room for its refusals, and requests
/// served eleven seconds before make none.
#[sim_test]
async fn the_reject_cap_counts_the_requests_of_the_last_ten_seconds(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Enforce));
    assert_eq!(refused_of(&app, 100, "1000").await, 0);
    sleep(MS(5_000)).await;
    assert_eq!(refused_of(&app, 100, "10").await, 40, "a fifth of 200");
    sleep(MS(20_000)).await;
    assert_eq!(refused_of(&app, 100, "1000").await, 0);
    sleep(MS(11_000)).await;
    assert_eq!(refused_of(&app, 100, "10").await, 20, "a fifth of 100");
}

#[sim_test]
async fn with_the_check_off_nothing_is_refused_or_counted(sim: Sim) {
    let app = app(&sim, &config(&sim, DeadlineCheck::Off));
    warm_up(&app).await;
    let response = app.request(get_with_deadline_header("/fixed", "10")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(sheds(&sim), Vec::<String>::new());
}

// A2: the concurrency limit, under a `TimeboxLayer`.

/// Holds its slot for 1 s.
#[get("/hold", timeout = "off")]
async fn hold() -> &'static str {
    sleep(MS(1000)).await;
    "held"
}

fn limited(sim: &Sim, limit: usize, global_ms: Option<u64>) -> (SimApp, Config) {
    let mut config = sim.config();
    config.server.admission.concurrency =
        Concurrency::Fixed(std::num::NonZeroUsize::new(limit).unwrap());
    config.server.timeouts.request_timeout_ms = global_ms;
    (layered(sim, &config), config)
}

/// `/work`, `/hold` and `/upload` under a `TimeboxLayer` of `config`.
fn layered(sim: &Sim, config: &Config) -> SimApp {
    let router: Router = routes![work, hold, upload].into_router(config);
    sim.app(router.layer(TimeboxLayer::new(config)))
}

/// Inherits the global deadline, when there is one.
#[get("/inherit")]
async fn inheriting() -> &'static str {
    "inherited"
}

/// The limit is `TimeboxLayer`'s: routes of `into_router` served with
/// none around them say once that no limit applies, also with no deadline
/// anywhere; under the layer they say nothing.
#[sim_test]
async fn a_limit_with_no_timebox_layer_to_apply_it_is_said_once(sim: Sim) {
    for global_ms in [None, Some(30_000)] {
        for layered in [false, true] {
            let (logs, _guard) = support::logs::Logs::capture();
            let mut config = sim.config();
            config.server.admission.concurrency =
                Concurrency::Fixed(std::num::NonZeroUsize::new(1).unwrap());
            config.server.timeouts.request_timeout_ms = global_ms;
            let mut router: Router = routes![inheriting, hold].into_router(&config);
            if layered {
                router = router.layer(TimeboxLayer::new(&config));
            }
            let app = sim.app(router);
            for path in ["/inherit", "/inherit", "/hold"] {
                let response = app.request(request("GET", path)).await;
                assert_eq!(response.status(), StatusCode::OK);
            }
            let warned = logs.lines_with("no concurrency limit applies");
            let case = format!("global {global_ms:?}, layered {layered}: {warned:?}");
            if layered {
                assert!(warned.is_empty(), "{case}");
            } else {
                assert_eq!(warned.len(), 1, "{case}");
                assert!(warned[0].contains("WARN"), "{case}");
                assert!(
                    support::logs::has_field(&warned[0], "route=\"/inherit\""),
                    "{case}"
                );
                assert!(
                    warned[0].contains("`server.admission.concurrency`"),
                    "{case}"
                );
            }
        }
    }
}

/// Spawns `request` on `app`; the task yields once so it is queued.
async fn spawned(
    app: &SimApp,
    request: Request<Body>,
) -> tokio::task::JoinHandle<http::Response<Body>> {
    let app = app.clone();
    let task = tokio::spawn(async move { app.request(request).await });
    tokio::task::yield_now().await;
    task
}

#[sim_test]
async fn a_queued_request_leaves_the_queue_at_its_deadline(sim: Sim) {
    let (app, _) = limited(&sim, 1, Some(50));
    let holder = spawned(&app, request("GET", "/hold")).await;
    let start = Instant::now();
    let response = app.request(request("GET", "/work")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(Instant::now() - start, MS(50));
    assert!(lines(&sim.observed())
        .contains(&"deadline_exceeded stage=admission route=/work".to_owned()));
    assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
}

/// Gives up after 50 ms by its own rule, and needs 10 ms of it.
#[get("/brief", timeout_ms = 50, min_budget_ms = 10)]
async fn brief() -> &'static str {
    "brief"
}

/// Holds its slot for 80 ms: past `/brief`'s deadline, short of CoDel's
/// interval.
#[get("/busy", timeout = "off")]
async fn busy() -> &'static str {
    sleep(MS(80)).await;
    "busy"
}

/// S4, O1: a route's own deadline that passes while the request waits in
/// the limit's queue is answered as expired and told at admission, not
/// refused as too short.
#[sim_test]
async fn a_route_deadline_spent_in_the_queue_is_told_at_admission_not_judged(sim: Sim) {
    let mut config = enforced_behind_one_slot(&sim);
    // The cap would allow the refusal: only the rule keeps it from coming.
    config.server.admission.max_reject_fraction = 1.0;
    let router: Router = routes![busy, brief].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    let holder = spawned(&app, request("GET", "/busy")).await;
    let response = app.request(request("GET", "/brief")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(sheds(&sim), Vec::<String>::new());
    assert!(lines(&sim.observed())
        .contains(&"deadline_exceeded stage=admission route=/brief".to_owned()));
    assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
}

/// A1 under a `TimeboxLayer`: a macro route is judged at its first poll,
/// after any wait in the limit's queue, so it learns its service time from
/// there too. Learnt from the request's arrival, the wait would count
/// twice: in the estimate, and off the time left.
#[sim_test]
async fn a_macro_route_learns_its_service_time_after_the_queue(sim: Sim) {
    let config = enforced_behind_one_slot(&sim);
    let router: Router = routes![busy, work].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    // A hundred successes of `/work` (40 ms), each after 80 ms in the
    // queue behind `/busy`.
    taught_behind(&app, "/busy", "/work").await;
    // 150 ms, 80 of them in the queue: 70 ms left for 40 ms of work.
    let holder = spawned(&app, request("GET", "/busy")).await;
    let start = Instant::now();
    let response = app.request(get_with_deadline_header("/work", "150")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(Instant::now() - start, MS(120));
    assert_eq!(sheds(&sim), Vec::<String>::new());
    assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
}

/// Gives up after 10 ms by its own rule: every request is timed-out work.
#[get("/late", timeout_ms = 10)]
async fn late() -> &'static str {
    sleep(MS(1000)).await;
    "late"
}

/// A timeout answer is dropped work for the limit, a macro route's own
/// and the layer's for a plain route alike: Vegas shrinks on every one,
/// down to a single slot.
#[sim_test]
async fn a_timeout_answer_counts_as_dropped_work_for_the_limit(sim: Sim) {
    for plain in [false, true] {
        let mut config = sim.config();
        config.server.admission.concurrency = Concurrency::Vegas;
        let router: Router = if plain {
            // The global deadline, which the layer gates a plain route by.
            config.server.timeouts.request_timeout_ms = Some(10);
            let late = axum::routing::get(|| async {
                sleep(MS(1000)).await;
                "late"
            });
            routes![hold].into_router(&config).route("/late", late)
        } else {
            routes![hold, late].into_router(&config)
        };
        let app = sim.app(router.layer(TimeboxLayer::new(&config)));
        for _ in 0..25 {
            let response = app.request(request("GET", "/late")).await;
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        }
        let holder = spawned(&app, request("GET", "/hold")).await;
        let second = app.request(request("GET", "/hold")).await;
        // No slot for it: shed, or, where the layer's queue knows only the
        // 10 ms global deadline, cut at that deadline in the queue.
        assert_eq!(
            second.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "plain {plain}"
        );
        assert_eq!(second.headers().contains_key("x-timebox-shed"), !plain);
        assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
    }
}

/// An adaptive limit that moves says so in the logs, from where to where:
/// Vegas steps down once for each timed-out request, to a single slot.
#[sim_test]
async fn a_limit_that_moves_says_so_in_the_logs(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let mut config = sim.config();
    config.server.admission.concurrency = Concurrency::Vegas;
    let router: Router = routes![late].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    for _ in 0..25 {
        app.request(request("GET", "/late")).await;
    }
    let moves = logs.lines_with("concurrency limit moved");
    assert_eq!(moves.len(), 19, "from 20 to 1: {moves:?}");
    assert!(moves[0].contains("DEBUG"), "{moves:?}");
    assert!(moves[0].contains("limit=19 previous=20"), "{moves:?}");
    assert!(moves[18].contains("moved from 2 to 1"), "{moves:?}");
}

/// A route's own A1 refusal did no work, so the limit takes no sample from
/// it: Vegas does not learn a "no-load" latency of nothing from refusals
/// and then read every real request as queued.
#[sim_test]
async fn a_routes_own_refusals_teach_the_limit_nothing(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Enforce);
    config.server.admission.concurrency = Concurrency::Vegas;
    config.server.admission.max_reject_fraction = 1.0;
    let router: Router = routes![work, fixed].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    for _ in 0..30 {
        let response = app.request(get_with_deadline_header("/fixed", "10")).await;
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    }
    two_waves_run_at_once(&app).await;
}

/// The layer's own A1 refusal of a plain route did no work either.
#[sim_test]
async fn the_layers_refusals_of_a_plain_route_teach_the_limit_nothing(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Enforce);
    config.server.admission.concurrency = Concurrency::Vegas;
    config.server.admission.max_reject_fraction = 1.0;
    config.server.timeouts.request_timeout_ms = Some(30_000);
    let plain = axum::routing::get(|| async {
        sleep(MS(40)).await;
        "done"
    });
    let router: Router = routes![work].into_router(&config).route("/plain", plain);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    // A hundred successes teach the layer's check a median of 40 ms.
    for _ in 0..100 {
        let response = app.request(request("GET", "/plain")).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    for _ in 0..30 {
        let response = app.request(get_with_deadline_header("/plain", "10")).await;
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    }
    two_waves_run_at_once(&app).await;
}

/// A request whose client went away before its answer (a hedge that lost
/// its race, a closed tab) says nothing of the server's latency: its slot
/// goes back with no sample, so hang-ups a millisecond in do not teach
/// Vegas a latency of nothing, nor shrink its limit as overload would.
#[sim_test]
async fn a_request_whose_client_went_away_teaches_the_limit_nothing(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Off);
    config.server.admission.concurrency = Concurrency::Vegas;
    let router: Router = routes![work].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    for _ in 0..30 {
        let gone = spawned(&app, request("GET", "/work")).await;
        sleep(MS(1)).await;
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
    }
    two_waves_run_at_once(&app).await;
}

/// Twenty requests for `/work` at once, twice: with a limit that learnt
/// nothing wrong, each wave runs at once, in 40 ms.
async fn two_waves_run_at_once(app: &SimApp) {
    for wave in 0..2 {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..20 {
            tasks.push(spawned(app, request("GET", "/work")).await);
        }
        for task in tasks {
            assert_eq!(task.await.unwrap().status(), StatusCode::OK);
        }
        assert_eq!(Instant::now() - start, MS(40), "wave {wave}");
    }
}

/// A route's own deadline spent in the limit's queue did no work either:
/// the slot it was handed at the end goes back with no sample, so Vegas
/// does not learn a latency of nothing from it, and read every real
/// request after it as queued.
#[sim_test]
async fn a_route_deadline_spent_in_the_queue_teaches_the_limit_nothing(sim: Sim) {
    let (logs, _guard) = support::logs::Logs::capture();
    let mut config = config(&sim, DeadlineCheck::Off);
    config.server.admission.concurrency = Concurrency::Vegas;
    config.server.timeouts.request_timeout_ms = Some(30_000);
    let router: Router = routes![work, busy, brief].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    // Vegas starts at 20 slots: twenty holders for 80 ms, and `/brief`
    // waits past its own 50 ms for the first slot to come free.
    let mut holders = Vec::new();
    for _ in 0..20 {
        holders.push(spawned(&app, request("GET", "/busy")).await);
    }
    let response = app.request(request("GET", "/brief")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    for holder in holders {
        assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
    }
    // Forty at once, enough to fill the grown limit: each takes 40 ms,
    // half the holders' time, so the limit has no reason to step down.
    let mut tasks = Vec::new();
    for _ in 0..40 {
        tasks.push(spawned(&app, request("GET", "/work")).await);
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().status(), StatusCode::OK);
    }
    let moves = logs.lines_with("concurrency limit moved");
    assert!(!moves.is_empty());
    for line in &moves {
        let (before, after) = moved(line);
        assert!(after > before, "{moves:#?}");
    }
}

/// The limits a `concurrency limit moved from A to B` line names.
fn moved(line: &str) -> (usize, usize) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|word| *word == "from")
        .expect("a move says from where");
    let limit = |word: &str| word.parse().expect("a limit is a number");
    (limit(words[at + 1]), limit(words[at + 3]))
}

/// S4's answer to a deadline that passed before the request arrived did no
/// work either, whether the route gives it (no global deadline) or the
/// layer does: no sample, so a caller sending `0` cannot teach Vegas a
/// latency of nothing and have it shed the real requests.
#[sim_test]
async fn a_deadline_passed_on_arrival_teaches_the_limit_nothing(sim: Sim) {
    for global_ms in [None, Some(1000)] {
        let mut config = config(&sim, DeadlineCheck::Off);
        config.server.admission.concurrency = Concurrency::Vegas;
        config.server.timeouts.request_timeout_ms = global_ms;
        let router: Router = routes![work].into_router(&config);
        let app = sim.app(router.layer(TimeboxLayer::new(&config)));
        for _ in 0..30 {
            let response = app.request(get_with_deadline_header("/work", "0")).await;
            assert_eq!(
                response.status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "global {global_ms:?}"
            );
        }
        two_waves_run_at_once(&app).await;
    }
}

/// A path whose GET has a rule of its own and whose POST is a plain axum
/// handler: the layer's check learns the path is plain from the POST, and
/// the GET that follows is still told its deadline once, by its rule.
#[sim_test]
async fn a_request_whose_route_rule_takes_over_is_told_its_deadline_once(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Dark);
    config.server.timeouts.request_timeout_ms = Some(2000);
    let router: Router = routes![work]
        .into_router(&config)
        .route("/work", axum::routing::post(|| async { "posted" }));
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    for method in ["POST", "POST", "GET"] {
        assert_eq!(
            app.request(request(method, "/work")).await.status(),
            StatusCode::OK
        );
    }
    let sets: Vec<String> = lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("deadline_set"))
        .collect();
    assert_eq!(
        sets,
        [
            "deadline_set source=global budget=2000ms route=/work",
            "deadline_set source=global budget=2000ms route=/work",
            "deadline_set source=route budget=1000ms route=/work",
        ]
    );
}

/// Counts whether its body was read.
#[post("/upload")]
async fn upload(body: String) -> String {
    body
}

#[sim_test]
async fn a_request_codel_sheds_gets_503_with_retry_after_and_its_body_is_never_read(sim: Sim) {
    let (app, _) = limited(&sim, 1, None);
    let _holder = spawned(&app, request("GET", "/hold")).await;
    let read = Arc::new(AtomicBool::new(false));
    let flag = read.clone();
    let body = Body::from_stream(futures_util::stream::poll_fn(move |_| {
        flag.store(true, Ordering::SeqCst);
        std::task::Poll::Ready(None::<Result<bytes::Bytes, std::io::Error>>)
    }));
    let start = Instant::now();
    let upload = Request::post("/upload").body(body).unwrap();
    let response = app.request(upload).await;
    // The queue was empty when it came: it may wait the whole interval.
    assert_eq!(Instant::now() - start, MS(100));
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["x-timebox-shed"], "overloaded");
    assert!((1..=3).contains(&retry_after_secs(&response)));
    assert!(!read.load(Ordering::SeqCst), "a shed request reads no body");
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=overloaded route=/upload"]
    );
}

/// A shed request's future is finished: polled again (which the `Future`
/// contract forbids, and hyper never does), it panics, as the crate's other
/// finished futures do, and never runs the handler it refused.
#[sim_test]
async fn a_shed_requests_future_polled_again_runs_no_handler(sim: Sim) {
    let (_, config) = limited(&sim, 1, None);
    // The layer around the router as one service, so that its future is
    // polled as it is (axum's routes poll theirs through a `Oneshot`).
    let router = tower::Layer::layer(
        &TimeboxLayer::new(&config),
        routes![work, hold, upload].into_router(&config),
    );
    let _holder = tokio::spawn(router.clone().oneshot(request("GET", "/hold")));
    tokio::task::yield_now().await;
    let read = Arc::new(AtomicBool::new(false));
    let flag = read.clone();
    let body = Body::from_stream(futures_util::stream::poll_fn(move |_| {
        flag.store(true, Ordering::SeqCst);
        std::task::Poll::Ready(None::<Result<bytes::Bytes, std::io::Error>>)
    }));
    let mut service = router;
    let upload = Request::post("/upload").body(body).unwrap();
    let mut shed = std::pin::pin!(service.call(upload));
    let response = std::future::poll_fn(|cx| shed.as_mut().poll(cx))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = shed.as_mut().poll(&mut cx);
    }));
    assert!(again.is_err(), "polled after completion");
    assert!(
        !read.load(Ordering::SeqCst),
        "the shed request's handler ran"
    );
}

#[sim_test]
async fn codel_sheds_after_the_target_once_the_queue_has_stood_for_the_interval(sim: Sim) {
    let (app, _) = limited(&sim, 1, None);
    let _holder = spawned(&app, request("GET", "/hold")).await;
    // A standing queue: one waiter after another, each shed in its turn.
    let start = Instant::now();
    let first = spawned(&app, request("GET", "/work")).await; // shed at 100 ms
    sleep(MS(97)).await;
    let second = spawned(&app, request("GET", "/work")).await; // shed at 102 ms
    assert_eq!(
        first.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    // The queue was empty until `first` came: it waited the whole interval.
    assert_eq!(Instant::now() - start, MS(100));
    // The queue has not been empty for 100 ms now: a newcomer waits 5 ms.
    let late = app.request(request("GET", "/work")).await;
    assert_eq!(late.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(Instant::now() - start, MS(105));
    assert_eq!(
        second.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

/// The log says when a spell of shedding begins, and when none has been
/// shed for 10 s, once each, with how many were shed: not a line per
/// shed, nor per time the queue empties and stands again.
#[sim_test]
async fn a_spell_of_shedding_is_said_where_it_begins_and_ends(sim: Sim) {
    use support::logs::Logs;

    let (app, _) = limited(&sim, 1, None);
    let (logs, _guard) = Logs::capture();
    let holder = spawned(&app, request("GET", "/hold")).await;
    let first = spawned(&app, request("GET", "/work")).await; // shed at 100 ms
    sleep(MS(97)).await;
    let second = spawned(&app, request("GET", "/work")).await; // shed at 102 ms
    for shed in [first, second] {
        assert_eq!(
            shed.await.unwrap().status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
    let late = app.request(request("GET", "/work")).await;
    assert_eq!(late.status(), StatusCode::SERVICE_UNAVAILABLE);
    logs.one_line_with("requests are shed", &["limit=1", "in_flight=1"]);
    // The holder's slot comes free with no one waiting: served at once,
    // but the spell goes on for 10 s after its last shed.
    assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
    let served = app.request(request("GET", "/work")).await;
    assert_eq!(served.status(), StatusCode::OK);
    let ended = "no request has been shed for 10 s";
    assert!(logs.lines_with(ended).is_empty());
    sleep(SECS(10)).await;
    let served = app.request(request("GET", "/work")).await;
    assert_eq!(served.status(), StatusCode::OK);
    logs.one_line_with(ended, &["shed=3"]);
    assert_eq!(logs.lines_with("requests are shed").len(), 1);
}

/// The same standing queue with `target_ms = 20` and `interval_ms = 300`.
#[sim_test]
async fn the_queue_keys_set_codels_target_and_interval(sim: Sim) {
    let (_, mut config) = limited(&sim, 1, None);
    config.server.admission.queue.target_ms = 20;
    config.server.admission.queue.interval_ms = 300;
    let app = layered(&sim, &config);
    let _holder = spawned(&app, request("GET", "/hold")).await;
    let start = Instant::now();
    let first = spawned(&app, request("GET", "/work")).await; // shed at 300 ms
    sleep(MS(297)).await;
    let second = spawned(&app, request("GET", "/work")).await; // shed at 317 ms
    assert_eq!(
        first.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(Instant::now() - start, MS(300));
    let late = app.request(request("GET", "/work")).await;
    assert_eq!(late.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(Instant::now() - start, MS(320));
    assert_eq!(
        second.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[sim_test]
async fn while_congested_a_freed_slot_goes_to_the_newest_request(sim: Sim) {
    let (app, _) = limited(&sim, 1, None);
    // The holder frees its slot at 1000 ms.
    let _holder = spawned(&app, request("GET", "/hold")).await;
    sleep(MS(898)).await;
    // The queue stands from here; it is congested from 998 ms.
    let keeper = spawned(&app, request("GET", "/work")).await; // shed at 998 ms
    sleep(MS(98)).await;
    let older = spawned(&app, request("GET", "/work")).await; // shed at 1001 ms
    sleep(MS(1)).await;
    let newer = spawned(&app, request("GET", "/work")).await; // shed at 1002 ms
    assert_eq!(
        keeper.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    // At 1000 ms the slot is free, and the newest waiter takes it.
    assert_eq!(newer.await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        older.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[sim_test]
async fn while_the_queue_is_young_a_freed_slot_goes_to_the_oldest_request(sim: Sim) {
    let (app, _) = limited(&sim, 1, None);
    let _holder = spawned(&app, request("GET", "/hold")).await;
    sleep(MS(940)).await;
    let older = spawned(&app, request("GET", "/work")).await;
    sleep(MS(10)).await;
    let newer = spawned(&app, request("GET", "/work")).await;
    // At 1000 ms the queue has stood 60 ms: first come, first served.
    assert_eq!(older.await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        newer.await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}

/// Plain axum routes under a `TimeboxLayer` of `config`: `/plain` takes
/// 40 ms, `/held` 80 ms.
fn plain_routes(config: &Config) -> Router {
    let taking = |ms| {
        axum::routing::get(move || async move {
            sleep(MS(ms)).await;
            "done"
        })
    };
    Router::new()
        .route("/plain", taking(40))
        .route("/held", taking(80))
        .layer(TimeboxLayer::new(config))
}

/// A hundred successes of `path`, each after waiting in the limit's queue
/// for as long as `holder` holds its one slot.
async fn taught_behind(app: &SimApp, holder: &str, path: &str) {
    for _ in 0..100 {
        let held = spawned(app, request("GET", holder)).await;
        let response = app.request(request("GET", path)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(held.await.unwrap().status(), StatusCode::OK);
    }
}

/// A plain axum route, `/plain`, taking 40 ms, under a `TimeboxLayer` with
/// a 1 s global deadline and the check in `check`'s mode, taught its 40 ms
/// median.
async fn warmed_plain_route(sim: &Sim, check: DeadlineCheck) -> SimApp {
    let mut config = config(sim, check);
    config.server.timeouts.request_timeout_ms = Some(1000);
    let app = sim.app(plain_routes(&config));
    for _ in 0..100 {
        assert_eq!(
            app.request(request("GET", "/plain")).await.status(),
            StatusCode::OK
        );
    }
    app
}

#[sim_test]
async fn a_plain_axum_route_under_the_timebox_layer_gets_the_same_check(sim: Sim) {
    let app = warmed_plain_route(&sim, DeadlineCheck::Enforce).await;
    let response = app.request(get_with_deadline_header("/plain", "10")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short route=/plain"]
    );
    // O1: the refused request's deadline was set, and told so first.
    assert_eq!(
        last(&sim, 2),
        [
            "deadline_set source=x-timebox-deadline-ms budget=10ms route=/plain",
            "request_shed reason=deadline_too_short route=/plain",
        ]
    );
    // A deadline that has already passed is S4's 503, as on a route with a
    // rule of its own, not a refusal for being too short.
    let response = app.request(get_with_deadline_header("/plain", "0")).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(sheds(&sim).len(), 1, "{:?}", sheds(&sim));
}

/// A1 under a `TimeboxLayer`: a plain route is judged at its arrival,
/// before any wait in the limit's queue, so it learns its service time
/// from there too, the wait included.
#[sim_test]
async fn a_plain_route_learns_its_service_time_from_its_arrival(sim: Sim) {
    let config = enforced_behind_one_slot(&sim);
    let app = sim.app(plain_routes(&config));
    // A hundred successes of `/plain` (40 ms), each after 80 ms in the
    // queue behind `/held`: 120 ms from arrival.
    taught_behind(&app, "/held", "/plain").await;
    // 100 ms at arrival, against the 120 ms its requests took from there.
    let holder = spawned(&app, request("GET", "/held")).await;
    let response = app.request(get_with_deadline_header("/plain", "100")).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short route=/plain"]
    );
    assert_eq!(holder.await.unwrap().status(), StatusCode::OK);
}

/// In dark mode too, a plain route's request is told its deadline before
/// the check's count, and once (O1).
#[sim_test]
async fn a_plain_routes_dark_count_follows_its_deadline(sim: Sim) {
    let app = warmed_plain_route(&sim, DeadlineCheck::Dark).await;
    let before = lines(&sim.observed()).len();
    // Counted, served, and cut at its 10 ms.
    app.request(get_with_deadline_header("/plain", "10")).await;
    let told = lines(&sim.observed())[before..].to_vec();
    assert_eq!(
        told[..2],
        [
            "deadline_set source=x-timebox-deadline-ms budget=10ms route=/plain",
            "request_shed reason=deadline_too_short_dark route=/plain",
        ]
    );
    let set = told.iter().filter(|line| line.starts_with("deadline_set"));
    assert_eq!(set.count(), 1, "{told:?}");
}

#[sim_test]
async fn a_route_with_its_own_rule_under_the_timebox_layer_is_checked_once(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Dark);
    config.server.timeouts.request_timeout_ms = Some(1000);
    let router: Router = routes![work].into_router(&config);
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    warm_up(&app).await;
    app.request(get_with_deadline_header("/work", "10")).await;
    // Told by the route's own check only, not also by the layer's.
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short_dark route=/work"]
    );
}

/// One path, two methods: the macros' `GET` with its own rule (`off`), and
/// a plain `POST` under the layer's global deadline. Each method is judged
/// by its own rule and learns its own service time: the `POST`'s 40 ms do
/// not refuse a `GET` that has no deadline, nor a `GET` leave the `POST`
/// unchecked.
#[sim_test]
async fn the_methods_of_one_path_are_checked_each_by_its_own_rule(sim: Sim) {
    let mut config = config(&sim, DeadlineCheck::Enforce);
    config.server.timeouts.request_timeout_ms = Some(1000);
    let router: Router = routes![list_items].into_router(&config).route(
        "/items",
        axum::routing::post(|| async {
            sleep(MS(40)).await;
            "created"
        }),
    );
    let app = sim.app(router.layer(TimeboxLayer::new(&config)));
    for _ in 0..100 {
        let response = app.request(request("POST", "/items")).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    let mut get = get_with_deadline_header("/items", "10");
    let response = app.request(get).await;
    assert_eq!(response.status(), StatusCode::OK, "the GET has no deadline");
    assert_eq!(sheds(&sim), Vec::<String>::new());
    // The GET did not make the path's POST look like a route of its own.
    get = get_with_deadline_header("/items", "10");
    *get.method_mut() = http::Method::POST;
    let response = app.request(get).await;
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(
        sheds(&sim),
        ["request_shed reason=deadline_too_short route=/items"]
    );
}

/// A refusal of the call's own short deadline (A1) is final, and no failure
/// of the host: a retry, with less time still, would be refused again, and
/// a caller short of time must not open its breaker to a healthy host.
#[sim_test]
async fn a_timebox_client_neither_retries_nor_blames_a_refusal_of_its_short_deadline(sim: Sim) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    sim.net().host(
        "strict",
        Router::new().route(
            "/",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async {
                    (
                        StatusCode::GATEWAY_TIMEOUT,
                        [("x-timebox-shed", "deadline_too_short")],
                    )
                }
            }),
        ),
    );
    let mut config = sim.config();
    config.breaker.minimum_sample_count = 3;
    let client = sim.client_with(&config);
    for call in 1..=5 {
        let response = client.get("http://strict/").send().await;
        let status = response.map(|response| response.status());
        assert_eq!(
            status.ok(),
            Some(StatusCode::GATEWAY_TIMEOUT),
            "call {call}"
        );
        assert_eq!(hits.load(Ordering::SeqCst), call, "one attempt a call");
    }
}

#[sim_test]
async fn a_timebox_client_pays_the_throttling_cost_to_retry_after_a_shed_503(sim: Sim) {
    sim.net().host(
        "busy",
        Router::new().route(
            "/",
            axum::routing::get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [("x-timebox-shed", "overloaded")],
                )
            }),
        ),
    );
    let mut config = sim.config();
    config.http.client.max_retries = 1;
    let client = sim.client_with(&config);
    client.get("http://busy/").send().await.unwrap();
    let tokens: Vec<String> = lines(&sim.observed())
        .into_iter()
        .filter(|line| line.starts_with("budget_tokens"))
        .collect();
    // Full (500), then the retry's 5 tokens of `throttling_cost`, not the
    // 14 of `transient_cost` (the first attempt's refill is 1.4).
    assert_eq!(tokens[0], "budget_tokens host=busy:80 tokens=500");
    assert!(
        tokens.contains(&"budget_tokens host=busy:80 tokens=495".to_owned()),
        "{tokens:?}"
    );
}
