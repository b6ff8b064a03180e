//! Shutdown of a real process on a real SIGTERM (DESIGN G1, G2), with real
//! requests on loopback.

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The server binary, started with short bounds: no pre-stop grace, 5 s for
/// requests in flight, 2 s to drain.
fn start_server() -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graceful-server"))
        .env("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "0")
        .env("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "5")
        .env("TIMEBOX_SERVER__DRAIN_FORCE_SECS", "2")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the server prints its address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("a `listening on` line")
        .to_owned();
    (child, addr)
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Waits for the process to exit, at most `bound`; its exit code.
async fn exit_within(child: &mut Child, bound: Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return status.code();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not exit within {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_lets_admitted_requests_finish_refuses_later_ones_and_exits_0() {
    let (mut child, addr) = start_server();
    let client = reqwest::Client::new();
    let admitted: Vec<_> = (0..100u64)
        .map(|i| {
            let client = client.clone();
            let url = format!("http://{addr}/work/{}", i * 5);
            tokio::spawn(async move {
                let response = client.get(url).send().await?;
                Ok::<u16, reqwest::Error>(response.status().as_u16())
            })
        })
        .collect();
    // Let every request reach the server before the signal.
    tokio::time::sleep(Duration::from_millis(200)).await;
    sigterm(&child);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let late = client
        .get(format!("http://{addr}/work/0"))
        .send()
        .await
        .expect("the listener stays open while requests finish");
    assert_eq!(late.status(), 503);
    assert!(late.headers().contains_key("retry-after"));
    for request in admitted {
        assert_eq!(request.await.unwrap().unwrap(), 200);
    }
    // Within the grace (5 s) and the drain bound (2 s), with room to start.
    assert_eq!(
        exit_within(&mut child, Duration::from_secs(8)).await,
        Some(0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_during_the_grace_exits_at_once() {
    let (mut child, addr) = start_server();
    let client = reqwest::Client::new();
    let stuck = tokio::spawn({
        let url = format!("http://{addr}/work/60000");
        async move { client.get(url).send().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    sigterm(&child);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(child.try_wait().unwrap().is_none(), "still in its grace");
    sigterm(&child);
    assert_eq!(
        exit_within(&mut child, Duration::from_secs(2)).await,
        Some(0)
    );
    assert!(
        stuck.await.unwrap().is_err(),
        "the stuck request was cut off"
    );
}
