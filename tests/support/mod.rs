//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part

pub mod allocations;
pub mod chain;
pub mod child;
pub mod drain;
pub mod files;
pub mod http;
pub mod logs;
pub mod observe;
pub mod ports;
pub mod postgres;
pub mod raw;
pub mod time;
pub mod upstream;
pub mod venv;

/// A current-thread runtime on a paused clock, for tests that cannot be
/// `#[tokio::test]`s (proptest bodies are plain functions).
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime builds")
}
