//! Integration tests of `timebox::deadline`, grouped by the rules D1–D7 of
//! DESIGN.md §2. Time is tokio's paused clock throughout: nothing sleeps in
//! real time.

mod bounded;
mod current;
mod error;
mod header_value;
mod point;
mod scope;
mod spawn;

use std::cell::Cell;
use std::error::Error;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use timebox::deadline::header::{self, DEADLINE_HEADER};
use timebox::deadline::{bounded, is_deadline_exceeded, unscoped, Deadline, DeadlineExceeded};
use tokio::sync::oneshot;
use tokio::time::{advance, sleep, sleep_until, Instant};
use tokio_test::{assert_pending, assert_ready};

const ONE: Duration = Duration::from_secs(1);
const FIVE: Duration = Duration::from_secs(5);

/// A `DeadlineExceeded` as work bounded by a deadline that has already
/// passed returns it.
async fn deadline_exceeded() -> DeadlineExceeded {
    Deadline::at(Instant::now())
        .scope(bounded(async {}))
        .await
        .expect_err("work under an expired deadline must be stopped")
}

/// Work that never finishes and never waits: it wakes itself at every poll.
fn busy_forever() -> impl Future<Output = ()> {
    poll_fn(|cx| {
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

/// Work that never finishes and uses up tokio's coop budget at every poll.
async fn spend_budget_forever() {
    loop {
        tokio::task::consume_budget().await;
    }
}
