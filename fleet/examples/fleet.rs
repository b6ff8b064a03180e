//! Three services on loopback in one binary, and a deadline crossing them:
//! an axum front (2 s route deadline) → a tonic relay (timebox's gRPC
//! server and client layers) → an axum leaf (reached through timebox's
//! HTTP client).
//!
//! ```text
//! cargo run --example fleet               # every hop answers
//! cargo run --example fleet -- --slow-leaf  # the leaf takes 10 s
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use timebox::config::Config;
use timebox_fleet::Fleet;

#[tokio::main]
async fn main() -> ExitCode {
    let slow = match std::env::args_os().skip(1).collect::<Vec<_>>()[..] {
        [] => false,
        [ref flag] if flag == "--slow-leaf" => true,
        _ => {
            eprintln!("usage: cargo run --example fleet [-- --slow-leaf]");
            return ExitCode::from(2);
        }
    };
    let fleet = match Fleet::start(&Config::default()).await {
        Ok(fleet) => fleet,
        Err(err) => {
            eprintln!("the fleet did not start: {err}");
            return ExitCode::FAILURE;
        }
    };
    fleet.leaf_state.set_slow(slow);
    println!(
        "front http://{}  →  relay grpc://{}  →  leaf http://{}{}",
        fleet.front,
        fleet.relay,
        fleet.leaf,
        if slow { " (slow: 10 s)" } else { "" }
    );

    let start = Instant::now();
    let answer = get_front(fleet.front).await;
    let elapsed = start.elapsed();
    match answer {
        Ok((status, body)) => {
            println!("\nGET /front → {status} after {} ms", elapsed.as_millis());
            for line in body.lines() {
                println!("  {line}");
            }
            // The relay's handler may be dropped just after the front's
            // answer: both deadlines end on the same clock tick.
            let waited = Instant::now();
            while slow && fleet.relay_state.dropped() == 0 && waited.elapsed() < DROP_WAIT {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            println!(
                "relay handlers dropped before they finished: {}",
                fleet.relay_state.dropped()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("GET /front failed: {err}");
            ExitCode::FAILURE
        }
    }
}

/// How long to wait for the relay's handler to be dropped after a slow
/// leaf's answer.
const DROP_WAIT: Duration = Duration::from_secs(1);

/// `GET /front`: the status and the body as text.
async fn get_front(front: std::net::SocketAddr) -> Result<(u16, String), reqwest::Error> {
    let response = reqwest::get(format!("http://{front}/front")).await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}
