//! Retries that cannot turn into a storm: per-host retry budgets, jittered
//! backoff, `Retry-After` hints and the rules for what may be retried.
//!
//! # Why a budget and not only a maximum number of retries?
//!
//! A maximum number of attempts looks safe one call at a time, but retries
//! multiply across layers. When a service deep in a call chain starts
//! failing, every caller above it retries, and so does every caller of those:
//! with 3 attempts at each of 5 layers, one user request becomes 3⁵ = 243
//! calls to the last service, arriving exactly when it is least able to
//! answer. Even one layer quadruples the load on a failing host at
//! `max_retries = 3`. The retries that were meant to ride out a blip keep the
//! service down: a retry storm.
//!
//! A [`RetryBudget`] bounds retries by *how much real traffic there is*
//! instead. It is a token bucket per upstream host: every first attempt pays
//! in a little (`retry_ratio × transient_cost`, 1.4 tokens at the defaults),
//! every retry takes out its cost (14 tokens after a 5xx, connect error or
//! timeout; 5 after a 429), and a retry the bucket cannot pay is not made. A
//! healthy host keeps its bucket full, so the occasional failure retries
//! freely, up to `max_retries`. A host that keeps failing drains it within a
//! few dozen retries, and from then on only about `retry_ratio` (10 %) of
//! calls may retry: the extra load a layer adds is capped near 10 % whatever
//! its callers do, instead of 300 %. This is the scheme of the AWS SDKs'
//! retry quota (its costs are the defaults here) with the 10 % retry limit of
//! Google's SRE book; tower's `retry::budget` makes the same argument.
//!
//! The bucket is a single atomic integer of thousandths of a token: no lock,
//! no clock and no background task, so checking the budget costs a
//! compare-and-swap and behaves identically on a paused test clock.
//!
//! # Who does what
//!
//! This module holds the arithmetic; the client (`timebox::client`) applies
//! it to each call:
//!
//! 1. Look up the host's bucket with [`RetryBudgets::for_uri`] (`None`: no
//!    budget, only `max_retries` and the deadline bound retries) and call
//!    [`RetryBudget::on_first_attempt`] once; a first attempt never waits.
//! 2. On an answer [`classify_answer`] calls retryable (it reads
//!    `x-timebox-shed`: a shed `503` is throttling and A1's `504` is final;
//!    [`classify_status`] judges a status alone), or a connect error or
//!    attempt timeout (both [`RetryKind::Transient`]), and only for an
//!    [`is_idempotent`] method or a request that opted in: compute the wait,
//!    [`Backoff::delay`] plus [`hint_wait`]; if the retry does not fit in the
//!    time left, stop without charging the budget.
//! 3. [`RetryBudget::try_withdraw`]: on `false`, return the last result at
//!    once.
//! 4. [`RetryBudget::refund`] the retry when it succeeds (final status below
//!    400) or is cancelled before it is sent: the budget meters load on a
//!    failing host, and neither of those added any.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use http::{HeaderMap, StatusCode, Uri};
//! use timebox::config::ClientConfig;
//! use timebox::entropy::Entropy;
//! use timebox::retry::{classify_status, hint_wait, Backoff, RetryBudgets};
//!
//! let config = ClientConfig::default();
//! let budgets = RetryBudgets::new(&config.retry_budget);
//! let backoff = Backoff::from_config(&config);
//! let entropy = Entropy::seeded(1);
//!
//! let budget = budgets.for_uri(&Uri::from_static("https://api.example/v1")).unwrap();
//! budget.on_first_attempt();
//! // The first attempt answered 429 without a `Retry-After`.
//! let status = StatusCode::TOO_MANY_REQUESTS;
//! let kind = classify_status(status).expect("429 is retryable");
//! let max_hint = Duration::from_secs(config.max_retry_after_secs);
//! let wait = backoff.delay(0, &entropy) + hint_wait(status, &HeaderMap::new(), max_hint).unwrap_or_default();
//! assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_millis(1100));
//! assert!(budget.try_withdraw(kind));
//! assert_eq!(budget.tokens(), 495.0);
//! ```

mod backoff;
mod budget;
mod budgets;
mod classify;
mod kind;
mod retry_after;

pub use backoff::Backoff;
pub use budget::RetryBudget;
#[cfg(feature = "client")]
pub(crate) use budgets::default_port;
pub use budgets::{host_key, RetryBudgets};
#[cfg(feature = "server")]
pub(crate) use classify::SHED_HEADER;
pub use classify::{classify_answer, classify_status, is_idempotent};
#[cfg(feature = "client")]
pub(crate) use classify::{refused_for_its_deadline, was_shed};
pub use kind::RetryKind;
pub use retry_after::{hint_wait, retry_after, DEFAULT_THROTTLING_HINT, MAX_HINT_WAIT};
