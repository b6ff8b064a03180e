//! A walk through timebox: each section says what it is about to show,
//! then each row runs one scenario and compares what it observed with what
//! timebox promises.
//!
//! ```text
//! cargo run --example tour
//! ```
//!
//! Everything runs on a paused tokio clock: a scenario that waits 30
//! seconds takes none, and the same run gives the same table. Where a real
//! socket is the point (a half-sent request head, a client that hangs up)
//! it is a loopback one. The process exits non-zero if any row is not ok.

mod admission;
mod client;
mod deadlines;
mod server;
mod shutdown;
mod streams;
mod table;

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    let sections = runtime.block_on(async {
        vec![
            deadlines::section().await,
            server::section().await,
            client::section().await,
            admission::section().await,
            streams::section().await,
            shutdown::section().await,
        ]
    });
    if table::print(&sections) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
