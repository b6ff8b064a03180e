//! Durations written short, as the tests use them: `MS(250)`, `SECS(5)`.

use std::time::Duration;

/// `n` milliseconds.
pub const MS: fn(u64) -> Duration = Duration::from_millis;
/// `n` seconds.
pub const SECS: fn(u64) -> Duration = Duration::from_secs;
