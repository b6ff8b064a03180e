//! Deterministic tests in virtual time: `#[sim_test]` and [`Sim`].
//!
//! Feature `sim`, which a crate enables from its `[dev-dependencies]`:
//! `timebox = { version = "…", features = ["sim"] }`.
//!
//! A simulation test runs on a current-thread tokio runtime whose clock is
//! paused at the start, so time moves only when every task is waiting (tokio
//! then jumps straight to the next timer) or when the test calls
//! [`Sim::advance`]. A test that waits an hour of virtual time finishes in
//! microseconds, and what it observes does not depend on the machine's load.
//!
//! Everything random that timebox draws comes from the simulation's seeded
//! [`Entropy`](crate::entropy::Entropy), so a failing run is replayed
//! exactly by running it again with the same seed. The parts the [`Sim`]
//! makes (`sim.client()`, `sim.app(..)`, its network) draw from it; a part
//! the test builds itself draws from the operating system unless it is
//! given the seed's source: `ClientLayer::new(&config).entropy(sim.entropy())`,
//! and the same `entropy` of `Client::builder()`, the `Timebox` middleware,
//! `TimeboxLayer` and `GrpcDeadlineLayer`. Two things in a test's
//! own code are not covered: an unbiased `tokio::select!` picks among
//! branches ready at once with tokio's own random source (write `biased;`
//! where the order matters), and a panic in a task the test spawned fails
//! only that task (await its `JoinHandle` to fail the test, with the replay
//! line).
//!
//! ```
//! use std::time::Duration;
//! use timebox::deadline::{bounded, Deadline};
//! use timebox::sim::Sim;
//!
//! #[timebox::sim_test(seed = 42)]
//! async fn slow_work_is_stopped_at_the_deadline(sim: Sim) {
//!     stops_slow_work(&sim).await;
//! }
//!
//! // Helpers are plain async fns: this one also runs below, on a runtime
//! // whose clock is paused, as `#[sim_test]`'s is.
//! async fn stops_slow_work(sim: &Sim) {
//!     let deadline = Deadline::after(Duration::from_secs(1));
//!     let result = deadline
//!         .scope(bounded(tokio::time::sleep(Duration::from_secs(10))))
//!         .await;
//!     assert!(result.is_err());
//!     assert_eq!(sim.seed(), 42);
//! }
//!
//! #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     stops_slow_work(&Sim::new(42)).await;
//! }
//! ```
//!
//! # Seeds
//!
//! The seed is, in order of precedence: the attribute's `seed = N`; the
//! environment variable `TIMEBOX_SIM_SEED` (decimal, or hexadecimal with
//! `0x`); 0. With `seeds = N` the body runs once for each of the N seeds
//! `base, base + 1, ..`, where `base` is `TIMEBOX_SIM_SEED` or 0; so the
//! replay line of a failing seed runs that seed first.
//!
//! When the body panics (a failed assertion) or returns an `Err`, the test
//! prints the line that replays it, then fails:
//!
//! ```text
//! TIMEBOX_SIM_SEED=0x2a cargo test -p my-service slow_work_is_stopped_at_the_deadline -- --exact
//! ```
//!
//! # Liveness
//!
//! A test that waits for something that never happens would otherwise hang.
//! Each run is bounded in *virtual* time by `TIMEBOX_SIM_LIVENESS_SECS`
//! (default one day, 86 400 s): past it the test fails with a message that
//! says so, and the replay line. Since virtual time jumps when nothing is
//! runnable, a stuck test reaches the bound at once.
//!
//! The bound cannot catch a test stuck while the clock cannot move: tokio
//! does not advance a paused clock while a `spawn_blocking` task runs, so
//! a blocking task that waits on the simulation (a `block_on` of a call
//! whose host has latency, a `blocking_recv` of something sent after a
//! sleep) hangs the test, as does a task that loops on `yield_now`.
//!
//! Simulation tests should not do real I/O: while the runtime waits for a
//! real socket, the paused clock jumps to the next timer.

mod app;
mod handle;
mod net;
#[doc(hidden)]
pub mod runner;

pub use app::SimApp;
pub use handle::Sim;
pub use net::{NetEvent, SimNet};
