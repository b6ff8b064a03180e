//! Shutdown of a real process on a real SIGTERM (DESIGN G1, G2), with real
//! requests on loopback.

#![cfg(unix)]

mod support;

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};
use support::child::Killed;

/// The server binary, started with short bounds: no pre-stop grace, 5 s for
/// requests in flight, `drain_force_secs` to drain. It is killed when the
/// test drops it, pass or fail.
fn start_server(drain_force_secs: u64) -> (Killed, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_graceful-server"));
    support::child::without_timebox_env(&mut command)
        .env("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "0")
        .env("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "5")
        .env(
            "TIMEBOX_SERVER__DRAIN_FORCE_SECS",
            drain_force_secs.to_string(),
        )
        .stdout(Stdio::piped());
    let mut child = Killed(command.spawn().expect("the server starts"));
    let stdout = child.0.stdout.take().expect("piped stdout");
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

fn sigterm(child: &Killed) {
    support::child::sigterm(child.0.id());
}

/// Waits for the process to exit, at most `bound`; its exit code.
async fn exit_within(child: &mut Killed, bound: Duration) -> Option<i32> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.0.try_wait().expect("the child can be waited for") {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "the server did not exit within {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Asks the server at `addr` for `path` every 20 ms until `taken` takes
/// the answer; fails the test with `not_yet` after `bound`. Each request
/// goes on a fresh connection: one kept from before phase 1 could be
/// closed under a new request.
async fn ask_until<T, F>(
    addr: &str,
    path: &str,
    bound: Duration,
    not_yet: &str,
    mut taken: impl FnMut(reqwest::Response) -> F,
) -> T
where
    F: Future<Output = Option<T>>,
{
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client");
    let give_up = Instant::now() + bound;
    loop {
        let response = client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .expect("the listener stays open while requests finish");
        if let Some(taken) = taken(response).await {
            return taken;
        }
        assert!(Instant::now() < give_up, "{not_yet}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `n` requests besides the asking one are in flight at the
/// server, at most 10 s.
async fn wait_in_flight(addr: &str, n: usize) {
    let not_yet = format!("{n} requests were not in flight within 10 s");
    ask_until(
        addr,
        "/in-flight",
        Duration::from_secs(10),
        &not_yet,
        |response| async move {
            let counted = response.text().await.expect("a count");
            let counted: usize = counted.parse().expect("a number");
            (counted > n).then_some(())
        },
    )
    .await;
}

/// Asks for `/work/0` until the server refuses it, as it does from phase 1
/// on; the refusal. At most 5 s.
async fn refused_at_phase_one(addr: &str) -> reqwest::Response {
    let not_yet = "requests were still answered 5 s after the SIGTERM";
    ask_until(
        addr,
        "/work/0",
        Duration::from_secs(5),
        not_yet,
        |response| async move { (response.status() != 200).then_some(response) },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_lets_admitted_requests_finish_refuses_later_ones_and_exits_0() {
    let (mut child, addr) = start_server(2);
    let client = reqwest::Client::new();
    let admitted: Vec<_> = (0..100u64)
        .map(|i| {
            let client = client.clone();
            // 2 s and more: each is still running when the last is let in.
            let url = format!("http://{addr}/work/{}", 2000 + i * 5);
            tokio::spawn(async move {
                let response = client.get(url).send().await?;
                Ok::<u16, reqwest::Error>(response.status().as_u16())
            })
        })
        .collect();
    // Every request reaches the server before the signal.
    wait_in_flight(&addr, 100).await;
    sigterm(&child);
    let late = refused_at_phase_one(&addr).await;
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
    // A drain bound (10 s) far past the 2 s the test waits for the exit: a
    // second signal that went on to drain would fail it.
    let (mut child, addr) = start_server(10);
    let client = reqwest::Client::new();
    let stuck = tokio::spawn({
        let url = format!("http://{addr}/work/60000");
        async move { client.get(url).send().await }
    });
    wait_in_flight(&addr, 1).await;
    sigterm(&child);
    // The first signal was taken: phase 1 refuses new requests.
    assert_eq!(refused_at_phase_one(&addr).await.status(), 503);
    assert!(child.0.try_wait().unwrap().is_none(), "still in its grace");
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

/// G1: Ctrl-C (SIGINT) starts the same sequence as SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigint_starts_the_same_shutdown() {
    let (mut child, addr) = start_server(2);
    let client = reqwest::Client::new();
    let admitted = tokio::spawn({
        let url = format!("http://{addr}/work/1000");
        async move { client.get(url).send().await.map(|r| r.status()) }
    });
    wait_in_flight(&addr, 1).await;
    support::child::sigint(child.0.id());
    assert_eq!(refused_at_phase_one(&addr).await.status(), 503);
    assert_eq!(admitted.await.unwrap().unwrap(), 200, "admitted, finished");
    assert_eq!(
        exit_within(&mut child, Duration::from_secs(8)).await,
        Some(0)
    );
}
