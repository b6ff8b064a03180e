//! The call engine: one outbound call as a state machine of attempts and
//! the decision after each.
//!
//! A [`Call`] knows the rules and keeps the state (the deadline, the retry
//! allowance, the target and its host's breaker and budget, the tokens it
//! holds); it never sends or sleeps. [`drive`](super::call::drive) runs it,
//! in a loop:
//!
//! 1. [`Call::start`] prepares the next request ([`Pending`]): it checks
//!    the deadline, takes the host's breaker permit, refills the host's
//!    bucket once per request, writes the deadline headers and numbers the
//!    request ([`Attempt`](super::Attempt), which the door puts where the
//!    next layer looks);
//! 2. the door's [`Sender`](super::call::Sender) sends it, bounded by
//!    [`Pending::ends`] and the deadline, and hands back what came of it;
//! 3. [`Call::decide`] settles the permit and says what comes next
//!    ([`Next`]): follow a redirect, wait and retry, or return.
//!
//! The doors are `Client` (over its transport), the reqwest middleware
//! (over the rest of the chain) and `ClientLayer` (over the inner tower
//! service); each only converts its request and response, so the rules
//! exist once.
//!
//! - [`request`]: what a door hands the engine (the request and its body;
//!   the call's [`CallOptions`](crate::client::CallOptions) beside them) and
//!   what it reads of an answer;
//! - [`call`]: the [`Call`], its state between attempts, and how it ends;
//! - [`attempt`]: [`Call::start`], the next request and its [`Pending`]
//!   attempt, and the hedge of a slow first one;
//! - [`decide`]: [`Call::decide`], what comes after an attempt;
//! - [`target`], [`charge`] and [`pinned`]: the host a request goes to, the
//!   tokens a retry holds, and the deadline a caller's header pins.

mod attempt;
mod call;
mod charge;
mod decide;
mod pinned;
mod request;
mod target;

pub(crate) use attempt::Pending;
pub(crate) use call::Call;
pub(crate) use decide::{Next, Outcome};
pub(crate) use request::{Answer, Body, Request};
