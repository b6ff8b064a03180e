//! The gateway against the official `openai` Python client, over loopback.

mod support;

use std::time::Duration;

use support::{open_stream, python_check, read_to_end, Gateway, PythonCheck};

const ANSWER: &str =
    "A deadline is a promise about time: keep it, pass it on, and stop when it is spent.";

#[test]
fn the_openai_client_streams_a_whole_answer_to_the_end() {
    let gateway = Gateway::start(&[]);
    let seen = python_check(&gateway, "stream");
    assert_eq!(seen["text"], ANSWER);
    assert_eq!(seen["finish_reason"], "stop");
}

#[test]
fn the_openai_client_reads_the_usage_of_a_stream_that_asked_for_it() {
    let gateway = Gateway::start(&[]);
    let seen = python_check(&gateway, "stream_usage");
    // "What is a deadline?": four words, the scripted models' tokens.
    assert_eq!(seen["usage"]["prompt_tokens"], 4, "{seen}");
    assert_eq!(seen["usage"], seen["not_streamed"], "{seen}");
}

#[test]
fn the_openai_client_reads_an_answer_that_is_not_streamed() {
    let gateway = Gateway::start(&[]);
    let seen = python_check(&gateway, "complete");
    assert_eq!(seen["text"], ANSWER);
    assert_eq!(seen["object"], "chat.completion");
}

#[test]
fn the_openai_client_raises_a_body_of_the_wrong_shape_as_a_bad_request_naming_the_field() {
    let gateway = Gateway::start(&[]);
    let seen = python_check(&gateway, "bad_request");
    assert_eq!(seen["wrong_shape"]["status"], 400, "{seen}");
    assert_eq!(seen["wrong_shape"]["param"], "messages[0].role", "{seen}");
    assert_eq!(seen["bad_value"]["status"], 400, "{seen}");
    assert_eq!(seen["bad_value"]["param"], "messages[0].content", "{seen}");
    let without_stream = &seen["stream_options_without_stream"];
    assert_eq!(without_stream["status"], 400, "{seen}");
    assert_eq!(without_stream["param"], "stream_options", "{seen}");
}

#[test]
fn a_model_that_goes_silent_ends_in_an_error_naming_inactivity_not_a_short_answer() {
    let gateway = Gateway::start(&[("TIMEBOX_STREAM__STREAM_INACTIVITY_TIMEOUT_SECS", "1")]);
    let seen = python_check(&gateway, "hang");
    assert_eq!(seen["cause"], "inactivity");
    assert_eq!(seen["text"], "Let me think about ");
    assert!(
        gateway
            .wait_for_log(&["step=Done"], Duration::from_secs(5))
            .is_some(),
        "`[DONE]` follows the error event"
    );
}

/// Heartbeats every second find the closed connection, if the server does
/// not see it at once; the remote cleanup may take up to 5 s (DESIGN R3).
/// The bound is counted from the client process's exit, a little after it
/// hung up. The client hangs up once the tool call has reached the tool
/// server: one that hangs up sooner leaves nothing to cancel.
#[test]
fn a_client_that_hangs_up_during_a_tool_call_gets_the_tool_cancelled() {
    let heartbeat = Duration::from_secs(1);
    let cleanup_bound = Duration::from_secs(5);
    let gateway = Gateway::start(&[("TIMEBOX_STREAM__HEARTBEAT_SECS", "1")]);
    let mut client = PythonCheck::start(&gateway, "disconnect");
    let started = gateway.wait_for_log(
        &["tool_server", "slow_task started"],
        Duration::from_secs(30),
    );
    assert!(
        started.is_some(),
        "the tool call did not start; gateway log:\n{}",
        gateway.log_text()
    );
    client.go_on();
    client.finish(&gateway);
    let bound = heartbeat + cleanup_bound;
    let cancelled =
        gateway.wait_for_log(&["tool_server", "notifications/cancelled received"], bound);
    assert!(
        cancelled.is_some(),
        "no notifications/cancelled within {bound:?}; gateway log:\n{}",
        gateway.log_text()
    );
    let stopped = gateway.wait_for_log(&["slow_task stopped: cancelled"], bound);
    assert!(
        stopped.is_some(),
        "the tool kept working:\n{}",
        gateway.log_text()
    );
    assert!(
        gateway
            .wait_for_log(&["step=Cancel(Disconnect)"], Duration::ZERO)
            .is_some(),
        "the stream ended as a disconnect"
    );
}

#[cfg(unix)]
#[test]
fn during_a_shutdown_the_openai_client_is_told_503_with_retry_after() {
    // Python and the client are ready before the clock of the shutdown runs.
    support::python();
    let mut gateway = Gateway::start(&[("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "60")]);
    // A stream in flight keeps phase 1 (refusing new requests) going.
    let base = gateway.base.clone();
    let stream = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let mut response =
                open_stream(&reqwest::Client::new(), &base, "scripted-slow-60s").await;
            read_to_end(&mut response).await
        })
    });
    assert!(
        gateway
            .wait_for_log(&["completion started"], Duration::from_secs(10))
            .is_some(),
        "the stream reached the gateway"
    );
    gateway.sigterm();
    assert!(
        gateway
            .wait_for_log(&["shutdown phase 1"], Duration::from_secs(5))
            .is_some(),
        "the SIGTERM started the shutdown:\n{}",
        gateway.log_text()
    );
    let seen = python_check(&gateway, "shutdown_503");
    assert_eq!(seen["status"], 503);
    let retry_after: u64 = seen["retry_after"]
        .as_str()
        .and_then(|value| value.parse().ok())
        .expect("Retry-After is whole seconds");
    assert!((1..=3).contains(&retry_after), "Retry-After {retry_after}");
    let ready = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(reqwest::get(format!("{}/ready", gateway.base)))
        .expect("the gateway answers `/ready`");
    assert_eq!(ready.status(), 503, "readiness");
    // A second signal ends the shutdown at once, stream or no stream.
    gateway.sigterm();
    assert_eq!(gateway.exit_within(Duration::from_secs(5)), Some(0));
    let body = stream.join().expect("the stream thread");
    assert!(body.contains("data: {"), "the stream had started: {body}");
}
