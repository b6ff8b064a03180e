//! Durations written short, as the tests use them: `MS(250)`, `SECS(5)`,
//! and times read on a clock paused part way through a test.

use std::time::Duration;

/// `n` milliseconds.
pub const MS: fn(u64) -> Duration = Duration::from_millis;
/// `n` seconds.
pub const SECS: fn(u64) -> Duration = Duration::from_secs;

/// Asserts that `elapsed` is `expected`, or later by at most `slack`: for
/// a clock paused part way through a test, as tokio's timers fire on whole
/// milliseconds of the runtime's clock.
pub fn assert_just_after(elapsed: Duration, expected: Duration, slack: Duration) {
    assert!(
        elapsed >= expected && elapsed <= expected + slack,
        "{elapsed:?} is not within {slack:?} after {expected:?}"
    );
}
