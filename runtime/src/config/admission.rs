//! `[server.admission]` and `[http.client.hedge]`: which work is started at
//! all, and when a second attempt races a slow first one.

use std::fmt;
use std::num::NonZeroUsize;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[server.admission]`: refusing work that cannot finish in time and
/// bounding how much runs at once.
///
/// ```toml
/// [server.admission]
/// deadline_check = "enforce"
/// max_reject_fraction = 0.2
/// concurrency = "gradient2"
///
/// [server.admission.queue]
/// target_ms = 5
/// interval_ms = 100
/// ```
///
/// [`Config::validate`](super::Config::validate) rejects a
/// `max_reject_fraction` outside `0.0..=1.0`, a queue `target_ms` or
/// `interval_ms` of 0 or over a day, and a target longer than the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdmissionConfig {
    /// Whether a request whose time left is below its route's estimated
    /// service time is refused before extraction. Default `"dark"`: such
    /// requests are counted (an event) and served.
    pub deadline_check: DeadlineCheck,
    /// Most of a route's requests that the deadline check refuses in any
    /// 10 s, as a fraction. Default 0.2.
    pub max_reject_fraction: f64,
    /// How many requests run at once. Default `"off"`.
    pub concurrency: Concurrency,
    /// `[server.admission.queue]`: the wait of a request over the limit.
    pub queue: QueueConfig,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            deadline_check: DeadlineCheck::default(),
            max_reject_fraction: 0.2,
            concurrency: Concurrency::Off,
            queue: QueueConfig::default(),
        }
    }
}

/// `server.admission.deadline_check`: what happens to a request that has
/// less time left than its route usually takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DeadlineCheck {
    /// No check, no estimate kept.
    Off,
    /// Counted (`request_shed` with reason `deadline_too_short_dark`) and
    /// served: how a deployment learns what `enforce` would refuse. The
    /// default.
    #[default]
    Dark,
    /// Refused with `504` and problem+json type
    /// `urn:timebox:deadline-too-short`, up to `max_reject_fraction`.
    Enforce,
}

/// `server.admission.concurrency`: the limit on requests running at once.
///
/// Written `"off"`, `"fixed:N"` (N at least 1), `"gradient2"` or `"vegas"`;
/// the last two adapt the limit to the latency they see, as Netflix's
/// `concurrency-limits` does, with its builders' defaults. Both start at 20
/// and grow only while at least half the limit is in flight. Each move of
/// an adaptive limit is logged at `debug` (target
/// `timebox::admission::limiter`, fields `limit` and `previous`).
///
/// Both learn from the requests that ran: one answered, or cut by its
/// deadline. A refusal (A1), an answer to a deadline spent before the
/// handler ran, and a request whose client went away before its answer (a
/// hedge that lost its race, a closed tab) teach them nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Concurrency {
    /// No limit.
    #[default]
    Off,
    /// At most this many at once.
    Fixed(NonZeroUsize),
    /// Netflix's `Gradient2Limit`, between 20 and 200: once a second (a
    /// window of at least ten requests, as Netflix's `WindowedLimit`), the
    /// window's mean latency is compared with its long-term average: the
    /// limit moves a fifth of the way towards its size scaled by that
    /// gradient (1 within 1.5× of the average, then lower, never below 0.5)
    /// plus a queue allowance of 4. So it grows while latency stays within
    /// 1.5× of the average, and shrinks, by at most a tenth a window, once
    /// latency is far enough above it for the gradient to outweigh the
    /// allowance.
    Gradient2,
    /// Netflix's `VegasLimit`, between 1 and 1000, per request: the queue is
    /// estimated from how far latency is above the lowest seen, and the
    /// limit grows or shrinks to keep it between `3·log10(limit)` and
    /// `6·log10(limit)`; a request its deadline cut shrinks it.
    Vegas,
}

impl fmt::Display for Concurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Fixed(limit) => write!(f, "fixed:{limit}"),
            Self::Gradient2 => f.write_str("gradient2"),
            Self::Vegas => f.write_str("vegas"),
        }
    }
}

/// A `server.admission.concurrency` value that is none of the four forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrencyParseError {
    found: String,
}

impl fmt::Display for ConcurrencyParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a concurrency limit; write \"off\", \"fixed:N\" with N at least 1, \
             \"gradient2\" or \"vegas\"",
            self.found
        )
    }
}

impl std::error::Error for ConcurrencyParseError {}

impl FromStr for Concurrency {
    type Err = ConcurrencyParseError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let error = || ConcurrencyParseError {
            found: value.to_owned(),
        };
        match value {
            "off" => Ok(Self::Off),
            "gradient2" => Ok(Self::Gradient2),
            "vegas" => Ok(Self::Vegas),
            // Digits only: `usize`'s parser would also take a sign.
            _ => value
                .strip_prefix("fixed:")
                .filter(|limit| limit.bytes().all(|byte| byte.is_ascii_digit()))
                .and_then(|limit| limit.parse().ok())
                .map(Self::Fixed)
                .ok_or_else(error),
        }
    }
}

impl Serialize for Concurrency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Concurrency {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        value.parse().map_err(serde::de::Error::custom)
    }
}

/// `[server.admission.queue]`: CoDel over the wait of requests above the
/// concurrency limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueConfig {
    /// Longest wait, in milliseconds, of a request queued while the queue is
    /// congested (not empty for `interval_ms`). Default 5 (CoDel's target).
    pub target_ms: u64,
    /// How long the queue must stay non-empty to count as congested, in
    /// milliseconds; also the longest wait while it is not. Default 100
    /// (CoDel's interval).
    pub interval_ms: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            target_ms: 5,
            interval_ms: 100,
        }
    }
}

impl QueueConfig {
    /// `target_ms` as a duration.
    #[must_use]
    pub const fn target(&self) -> Duration {
        Duration::from_millis(self.target_ms)
    }

    /// `interval_ms` as a duration.
    #[must_use]
    pub const fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms)
    }
}

/// `[http.client.hedge]`: a second attempt after a slow first one.
///
/// Only idempotent requests are hedged, only while the time left covers
/// the host's median latency, only while the host's retry bucket is at
/// least half full (a hedge costs `hedge_cost` tokens), and at most
/// `max_extra_load` of a host's requests. The first response wins; the
/// other attempt is dropped.
///
/// [`Config::validate`](super::Config::validate) rejects a `delay_ms` or
/// `hedge_cost` of 0 and a `max_extra_load` outside `0.0..=1.0`, with
/// `enabled` off too: `RequestBuilder::hedge` (`timebox::client`) hedges
/// one request with these values either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HedgeConfig {
    /// Whether every idempotent request may be hedged. Default `false`;
    /// `RequestBuilder::hedge()` turns it on for one request.
    pub enabled: bool,
    /// A fixed delay before the hedge, in milliseconds. Default unset: the
    /// host's p95 latency over 30 s (its newest 512 answers at most), once
    /// 100 answers were seen (no hedge before that). The estimates come
    /// from the calls that may hedge.
    /// With a fixed delay a host may be hedged before it has estimates (as
    /// soon as `max_extra_load` allows, below), and the check that the time
    /// left covers its median applies once it has one (after 100 answers):
    /// until then a hedge may go with little time left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Tokens of the host's retry budget a hedge costs. Default 5.
    pub hedge_cost: u64,
    /// Most of a host's requests that are hedged, as a fraction. Default 0.05.
    /// The share counts the host's last 10 s of requests that could be
    /// hedged, this one included: a hedge goes only if, with it, no more
    /// than this share were, so at 0.05 a host is hedged once it has had 20
    /// such requests in 10 s, and a host called less often is not hedged
    /// at all. 1.0 lifts the cap.
    pub max_extra_load: f64,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            delay_ms: None,
            hedge_cost: 5,
            max_extra_load: 0.05,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroUsize;

    use super::Concurrency;

    #[test]
    fn concurrency_reads_and_writes_its_four_forms() {
        for (text, value) in [
            ("off", Concurrency::Off),
            ("fixed:8", Concurrency::Fixed(NonZeroUsize::new(8).unwrap())),
            ("gradient2", Concurrency::Gradient2),
            ("vegas", Concurrency::Vegas),
        ] {
            assert_eq!(text.parse::<Concurrency>(), Ok(value));
            assert_eq!(value.to_string(), text);
        }
    }

    #[test]
    fn a_concurrency_of_another_shape_is_refused_by_name() {
        for text in ["fixed:0", "fixed:", "fixed:-1", "fixed", "aimd", ""] {
            let error = text.parse::<Concurrency>().unwrap_err();
            assert!(error.to_string().contains("\"fixed:N\""), "{error}");
        }
    }
}
