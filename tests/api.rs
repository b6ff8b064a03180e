//! What the public types promise to the compiler: which can cross threads,
//! which can be shared, and which need no pinning.

use std::future::Ready;

use timebox::breaker::{CircuitBreaker, Open, Permit};
use timebox::client::{Client, ClientError, RequestBuilder, Response};
use timebox::config::{Config, ConfigError, Warning};
use timebox::deadline::{Bounded, Deadline, DeadlineExceeded, Scope, Unscoped};
use timebox::entropy::Entropy;
use timebox::registry::{CancelReason, Registry, RequestGuard, ToolCalls};
use timebox::retry::{RetryBudget, RetryBudgets};
use timebox::server::{RouteDeadlineLayer, Routes, ShutdownGateLayer, TimeboxLayer};
use timebox::shutdown::{DrainToken, InFlight, InFlightGuard, Shutdown, ShutdownToken};
use timebox::sim::{Sim, SimNet};
use timebox::watchdog::{StreamTimeout, Suspension, Watchdog, WatchdogHandle};

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}
fn unpin<T: Unpin>() {}

#[test]
fn handles_errors_and_settings_are_send_and_sync() {
    send_sync::<Deadline>();
    send_sync::<DeadlineExceeded>();
    send_sync::<Config>();
    send_sync::<ConfigError>();
    send_sync::<Warning>();
    send_sync::<Entropy>();
    send_sync::<Client>();
    send_sync::<ClientError>();
    send_sync::<RetryBudget>();
    send_sync::<RetryBudgets>();
    send_sync::<CircuitBreaker>();
    send_sync::<Permit>();
    send_sync::<Open>();
    send_sync::<Shutdown>();
    send_sync::<ShutdownToken>();
    send_sync::<DrainToken>();
    send_sync::<InFlight>();
    send_sync::<InFlightGuard>();
    send_sync::<Watchdog>();
    send_sync::<WatchdogHandle>();
    send_sync::<Suspension>();
    send_sync::<StreamTimeout>();
    send_sync::<Registry>();
    send_sync::<CancelReason>();
    send_sync::<ToolCalls>();
    send_sync::<TimeboxLayer>();
    send_sync::<RouteDeadlineLayer>();
    send_sync::<ShutdownGateLayer>();
    send_sync::<Sim>();
    send_sync::<SimNet>();
}

/// An observer counts events by their values: every value type an event
/// carries can be a map key.
#[test]
fn the_values_events_carry_can_key_a_map() {
    use std::collections::HashMap;
    use timebox::observe::{
        Attempt, AttemptKind, BreakerCallOutcome, CallOutcome, DeadlineSource, PhaseOutcome,
        ShedReason, ShutdownPhase, SkipReason, Stage,
    };

    fn key<T: std::hash::Hash + Eq>() {}
    key::<Stage>();
    key::<CallOutcome>();
    key::<SkipReason>();
    key::<BreakerCallOutcome>();
    key::<ShutdownPhase>();
    key::<PhaseOutcome>();
    key::<ShedReason>();
    key::<DeadlineSource>();
    key::<Attempt>();
    key::<AttemptKind>();
    key::<timebox::observe::Kind>();
    key::<timebox::config::Concurrency>();
    key::<timebox::config::DeadlineCheck>();
    key::<timebox::watchdog::TimeoutKind>();
    key::<CancelReason>();
    key::<timebox::breaker::BreakerState>();
    key::<timebox::observe::Label>();
    let mut skipped: HashMap<(SkipReason, Stage), u64> = HashMap::new();
    *skipped
        .entry((SkipReason::Budget, Stage::Outbound))
        .or_default() += 1;
    assert_eq!(skipped[&(SkipReason::Budget, Stage::Outbound)], 1);
}

/// A test of code that handles timebox's errors builds them.
#[test]
fn the_errors_timebox_hands_out_can_be_made_for_tests() {
    use std::time::Duration;
    use timebox::watchdog::TimeoutKind;

    let open = Open::new(Some(Duration::from_secs(3)));
    assert_eq!(open.retry_in(), Some(Duration::from_secs(3)));
    let ended = StreamTimeout::new(TimeoutKind::Inactivity, Duration::from_secs(5));
    assert_eq!(ended.kind(), TimeoutKind::Inactivity);
    assert_eq!(ended.limit(), Duration::from_secs(5));
    assert_eq!(ended.to_string(), "stream timed out: no activity for 5s");
    assert!(timebox::deadline::is_deadline_exceeded(
        &DeadlineExceeded::new()
    ));
}

/// These own boxed closures that need not be `Sync`: they move between
/// threads, one owner at a time.
#[test]
fn builders_and_route_sets_can_move_to_another_thread() {
    send::<RequestBuilder>();
    send::<Routes<()>>();
}

/// A handler may hold `response.headers()` across an `.await` and stay
/// `Send`, as with reqwest's response.
#[test]
fn a_response_can_be_shared_across_an_await() {
    send_sync::<Response>();
}

/// A handler may hold `&guard` across an `.await` and stay `Send`.
#[test]
fn a_request_guard_can_be_shared_across_an_await() {
    send_sync::<RequestGuard>();
}

#[test]
fn the_deadline_futures_are_send_and_need_no_pinning_around_unpin_work() {
    send::<Bounded<Ready<()>>>();
    send::<Scope<Ready<()>>>();
    send::<Unscoped<Ready<()>>>();
    unpin::<Bounded<Ready<()>>>();
    unpin::<Scope<Ready<()>>>();
    unpin::<Unscoped<Ready<()>>>();
}

/// A response body that ends its stream when the shutdown drains keeps
/// the token's wait in a field: a future with a name, `Send` and `Sync`.
#[test]
fn the_shutdown_tokens_waits_can_be_named_in_a_response_body() {
    use tokio_util::sync::{WaitForCancellationFuture, WaitForCancellationFutureOwned};

    struct DrainAwareBody {
        _drained: WaitForCancellationFutureOwned,
        _stopping: WaitForCancellationFutureOwned,
    }
    let shutdown = Shutdown::new(&Config::default());
    let _body = DrainAwareBody {
        _drained: shutdown.drain_token().cancelled_owned(),
        _stopping: shutdown.token().cancelled_owned(),
    };
    send_sync::<DrainAwareBody>();
    let token = shutdown.token();
    let _borrowed: WaitForCancellationFuture<'_> = token.cancelled();
}

#[test]
fn the_grpc_layers_services_and_bodies_cross_threads() {
    use http_body_util::Full;
    use timebox::grpc::{
        GrpcBody, GrpcClientDeadline, GrpcClientFuture, GrpcDeadlineLayer, GrpcServerDeadline,
        GrpcServerFuture, Outbound,
    };

    type Answer = Ready<Result<http::Response<Full<bytes::Bytes>>, std::io::Error>>;
    send_sync::<GrpcDeadlineLayer>();
    send_sync::<GrpcDeadlineLayer<Outbound>>();
    send_sync::<GrpcServerDeadline<()>>();
    send_sync::<GrpcClientDeadline<()>>();
    send::<GrpcServerFuture<Answer>>();
    send::<GrpcClientFuture<Answer>>();
    // `Sync` too, as `http_body_util::combinators::BoxBody` asks.
    send_sync::<GrpcBody<Full<bytes::Bytes>>>();
}

/// `layer` wrapped around `1_u8`; its inner service, read, changed and
/// taken back, is 2 all three ways.
macro_rules! assert_wrapper_hands_back_its_inner {
    ($layer:expr) => {{
        let mut wrapped = tower::Layer::layer(&$layer, 1_u8);
        *wrapped.get_mut() += 1;
        assert_eq!(*wrapped.get_ref(), 2, "get_ref of {}", stringify!($layer));
        assert_eq!(
            wrapped.into_inner(),
            2,
            "into_inner of {}",
            stringify!($layer)
        );
    }};
}

#[test]
fn each_wrapping_service_hands_back_its_inner_service() {
    use timebox::client::ClientLayer;
    use timebox::grpc::GrpcDeadlineLayer;
    use timebox::server::RouteTimeout;

    let config = Config::default();
    assert_wrapper_hands_back_its_inner!(TimeboxLayer::new(&config));
    assert_wrapper_hands_back_its_inner!(RouteDeadlineLayer::new(RouteTimeout::Off));
    assert_wrapper_hands_back_its_inner!(ShutdownGateLayer::new(&Shutdown::new(&config)));
    assert_wrapper_hands_back_its_inner!(ClientLayer::new(&config));
    assert_wrapper_hands_back_its_inner!(GrpcDeadlineLayer::server(&config));
    assert_wrapper_hands_back_its_inner!(GrpcDeadlineLayer::client(&config));
}

#[test]
fn the_session_masks_hand_back_the_session_layers_service_and_yours() {
    use timebox::server::SaveSessionUnlessCancelledLayer;
    use tower::layer::util::Identity;

    // With no session layer between them, the outer mask wraps the inner.
    let layer = SaveSessionUnlessCancelledLayer::new(Identity::new());
    let mut outer = tower::Layer::layer(&layer, 1_u8);
    *outer.get_mut().get_mut() += 1;
    assert_eq!(*outer.get_ref().get_ref(), 2);
    assert_eq!(outer.into_inner().into_inner(), 2);
}
