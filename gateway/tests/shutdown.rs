//! SIGTERM to a gateway with streams in flight (DESIGN G1, G2, R3).

#![cfg(unix)]

mod support;

use std::time::{Duration, Instant};

use support::{answer_of, open_stream, position_of, read_to_end, Gateway};

const ANSWER: &str =
    "A deadline is a promise about time: keep it, pass it on, and stop when it is spent.";

/// Streams that need 3 s fit in the 5 s grace; streams that need 60 s do not,
/// whether they stream tokens or wait for a tool.
const SHORT: &str = "scripted-slow-3s";
const LONG: &str = "scripted-slow-60s";
const TOOL: &str = "scripted-tool-60s";
const GRACE: Duration = Duration::from_secs(5);
const DRAIN_FORCE: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_lets_streams_finish_within_the_grace_and_ends_the_rest_with_done() {
    let mut gateway = Gateway::start(&[
        ("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "0"),
        ("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "5"),
        ("TIMEBOX_SERVER__DRAIN_FORCE_SECS", "2"),
    ]);
    let client = reqwest::Client::new();
    let opened: Vec<_> = (0..20)
        .map(|i| {
            let (client, base) = (client.clone(), gateway.base.clone());
            let model = match i % 4 {
                0 | 2 => SHORT,
                1 => LONG,
                _ => TOOL,
            };
            tokio::spawn(async move {
                let mut response = open_stream(&client, &base, model).await;
                let head = read_until_data(&mut response).await;
                (model, response, head)
            })
        })
        .collect();
    let mut streams = Vec::new();
    for stream in opened {
        let (model, mut response, head) = stream.await.expect("the stream opens");
        streams.push(tokio::spawn(async move {
            let body = head + &read_to_end(&mut response).await;
            (model, body, Instant::now())
        }));
    }

    // Every stream has its first token: signal.
    let signalled = Instant::now();
    gateway.sigterm();
    assert!(
        tokio::task::block_in_place(|| {
            gateway.wait_for_log(&["shutdown phase 1"], Duration::from_secs(5))
        })
        .is_some(),
        "the SIGTERM started the shutdown:\n{}",
        gateway.log_text()
    );
    let late = client
        .get(format!("{}/v1/models", gateway.base))
        .send()
        .await
        .expect("the listener stays open while streams finish");
    assert_eq!(late.status(), 503);
    let retry_after: u64 = late
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok()?.parse().ok())
        .expect("a whole-seconds Retry-After");
    assert!((1..=3).contains(&retry_after), "Retry-After {retry_after}");

    for stream in streams {
        let (model, body, ended) = stream.await.expect("the stream is read");
        assert!(body.trim_end().ends_with("data: [DONE]"), "{model}: {body}");
        assert!(!body.contains("event: error"), "{model}: {body}");
        if model == SHORT {
            assert_eq!(answer_of(&body), ANSWER, "{model} finished");
            assert!(body.contains(r#""finish_reason":"stop""#), "{body}");
        } else {
            assert!(!body.contains(r#""finish_reason":"stop""#), "{body}");
            assert!(
                ended.duration_since(signalled) >= GRACE - Duration::from_millis(500),
                "{model} was ended before the grace was over"
            );
        }
    }
    // Each tool stream was told `[DONE]` before its tool call was
    // cancelled, and each tool heard of it (DESIGN R3).
    let settled = |log: &[(Instant, String)]| {
        let count =
            |wanted: &dyn Fn(&str) -> bool| log.iter().filter(|(_, line)| wanted(line)).count();
        let cleaned = count(&|line| line.contains("step=RemoteCleanup"));
        let told = count(&|line| {
            line.contains("notifications/cancelled received") && line.contains("shutdown")
        });
        (cleaned >= 10 && told == 5).then_some(())
    };
    let settled = tokio::task::block_in_place(|| gateway.wait_for(Duration::from_secs(2), settled));
    assert!(settled.is_some(), "{}", gateway.log_text());
    let log = gateway.log_lines();
    let tool_requests: Vec<&str> = log
        .iter()
        .filter(|line| line.contains("completion started") && line.contains(TOOL))
        .filter_map(|line| line.split("request_id=").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(tool_requests.len(), 5, "{log:#?}");
    for id in tool_requests {
        let request = format!("request_id={id}");
        assert!(
            position_of(&log, &[&request, "step=Done"])
                < position_of(&log, &[&request, "step=RemoteCleanup"]),
            "{id}: {log:#?}"
        );
    }
    let bound = GRACE + DRAIN_FORCE + Duration::from_secs(3);
    assert_eq!(
        tokio::task::block_in_place(|| gateway.exit_within(bound)),
        Some(0)
    );
}

/// The gateway lets its tool servers read the last cancellation notices
/// after the server stopped (up to 2 s after the last one); a second signal
/// then ends it at once, as the README says a second Ctrl-C does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_while_the_tools_are_told_goodbye_ends_at_once() {
    let mut gateway = Gateway::start(&[
        ("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "0"),
        ("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "1"),
        ("TIMEBOX_SERVER__DRAIN_FORCE_SECS", "1"),
    ]);
    let client = reqwest::Client::new();
    let mut response = open_stream(&client, &gateway.base, TOOL).await;
    let head = read_until_data(&mut response).await;
    gateway.sigterm();
    let body = head + &read_to_end(&mut response).await;
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    let over = tokio::task::block_in_place(|| {
        gateway.wait_for_log(&["shutdown complete"], Duration::from_secs(5))
    });
    assert!(over.is_some(), "{}", gateway.log_text());
    gateway.sigterm();
    assert_eq!(
        tokio::task::block_in_place(|| gateway.exit_within(Duration::from_millis(1000))),
        Some(0)
    );
}

/// Reads until the first `data:` line has arrived; what was read.
async fn read_until_data(response: &mut reqwest::Response) -> String {
    let mut body = String::new();
    while !body.contains("data: ") {
        match response.chunk().await {
            Ok(Some(chunk)) => body.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("the stream ended before its first token: {other:?}: {body}"),
        }
    }
    body
}
