//! Integration tests of `timebox::retry`: the retry budget (DESIGN.md §5
//! B1–B4), backoff and `Retry-After` (C5), and what is retryable (C4).
//! The budget has no clock and backoff draws from a seeded `Entropy`; the
//! one client-level property runs its calls on a paused clock.

#[path = "../support/mod.rs"]
mod support;

mod backoff;
mod bucket;
mod bucket_model;
mod classify;
mod first_attempts;
mod per_host;
mod retry_after;
mod steady_state;
mod steady_state_bound;
mod strategies;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use axum::body::Bytes;
use futures_util::stream;
use http::header::{DATE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use proptest::prelude::*;
use timebox::client::{Client, ResponseBody, Transport, TransportError, TransportFuture};
use timebox::config::{BudgetConfig, ClientConfig, Config};
use timebox::entropy::Entropy;
use timebox::retry::{
    classify_status, hint_wait, is_idempotent, retry_after, Backoff, RetryBudget, RetryBudgets,
    RetryKind,
};

const TRANSIENT: RetryKind = RetryKind::Transient;
const THROTTLING: RetryKind = RetryKind::Throttling;

fn budget() -> RetryBudget {
    RetryBudget::new(&BudgetConfig::default())
}

/// Withdraws `kind` until the bucket refuses; returns how many were paid.
fn drain(budget: &RetryBudget, kind: RetryKind) -> usize {
    std::iter::from_fn(|| budget.try_withdraw(kind).then_some(()))
        .take(10_000)
        .count()
}

fn uri(s: &'static str) -> Uri {
    Uri::from_static(s)
}
