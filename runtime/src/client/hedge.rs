//! Hedging (A3): after a delay, a second request races a first one that is
//! slow to answer, and the first answer wins.
//!
//! The engine asks [`Hedging`] twice per call. When the first attempt
//! starts: is this call a candidate, and after how long
//! ([`Hedging::delay`])? When that delay has passed with no answer: may the
//! hedge go now ([`Hedging::admit`])? The answers come from the host's
//! [`HostStats`]: the latencies of its recent answers and the share of its
//! requests hedged lately. "The Tail at Scale" (Dean and Barroso, 2013)
//! hedges at the 95th percentile, which bounds the extra load near 5 %.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::admission::{Estimate, FractionCap, LatencyWindow};
use crate::bounded_map::BoundedMap;
use crate::config::HedgeConfig;
use crate::retry::RetryBudget;

/// The hedging rules of a client, and the stats of its hosts.
#[derive(Debug)]
pub(crate) struct Hedging {
    config: HedgeConfig,
    hosts: BoundedMap<Arc<HostStats>>,
}

/// What the client knows of one host's recent answers.
#[derive(Debug)]
pub(crate) struct HostStats {
    latency: Mutex<LatencyWindow>,
    hedged: Mutex<FractionCap>,
}

/// Why a hedge was not sent when its delay passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The time left no longer covers the host's median.
    Deadline,
    /// The host's retry bucket is below half full (or cannot pay).
    Budget,
    /// `max_extra_load` of the host's requests are hedged already.
    ExtraLoad,
}

/// A hedge's admission: the second it took its place in the host's share
/// in, where [`Hedging::withdraw`] gives it back should the hedge not go
/// after all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admitted {
    taken_in: Instant,
}

impl Refusal {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Deadline => "the time left no longer covers the host's median",
            Self::Budget => "the host's retry budget is below half full",
            Self::ExtraLoad => "the host's share of hedged requests is used up",
        }
    }
}

impl Hedging {
    pub(crate) fn new(config: &HedgeConfig, max_hosts: usize) -> Self {
        Self {
            config: config.clone(),
            hosts: BoundedMap::new(max_hosts),
        }
    }

    /// Whether calls are hedged unless they say otherwise.
    pub(crate) const fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The stats of `host`, made on first use; `None` past `max_hosts`
    /// hosts (such a host is never hedged).
    pub(crate) fn stats(&self, host: &str) -> Option<Arc<HostStats>> {
        self.hosts.get_or_make(host, || {
            Arc::new(HostStats {
                latency: Mutex::new(LatencyWindow::new()),
                hedged: Mutex::new(FractionCap::new(self.config.max_extra_load)),
            })
        })
    }

    /// How long a hedging call waits for its first attempt before sending a
    /// hedge: `delay_ms`, else the host's p95; `None` (no hedge) while the
    /// host has fewer than 100 answers of the last 30 s. Counts the call
    /// among the host's requests.
    pub(crate) fn delay(&self, stats: &HostStats) -> Option<Duration> {
        let now = Instant::now();
        stats.hedged().count(now);
        let fixed = self.config.delay_ms.map(Duration::from_millis);
        fixed.or_else(|| stats.estimate(now).map(|estimate| estimate.p95))
    }

    /// Whether the hedge may go now, with `left` of the call's deadline:
    /// the time left still covers the host's median (when it has one: with
    /// a fixed `delay_ms`, a host with fewer than 100 answers has none),
    /// the host's share of hedged requests is not used up, and its retry
    /// bucket (when it has one) is at least half full and pays
    /// `hedge_cost`.
    pub(crate) fn admit(
        &self,
        stats: &HostStats,
        left: Option<Duration>,
        budget: Option<&RetryBudget>,
    ) -> Result<Admitted, Refusal> {
        let now = Instant::now();
        let median = stats.estimate(now).map(|estimate| estimate.median);
        if let (Some(left), Some(median)) = (left, median) {
            if left < median {
                return Err(Refusal::Deadline);
            }
        }
        if budget.is_some_and(|budget| !budget.try_withdraw_hedge(self.config.hedge_cost)) {
            return Err(Refusal::Budget);
        }
        let Some(taken_in) = stats.hedged().try_take(now) else {
            if let Some(budget) = budget {
                budget.refund_hedge(self.config.hedge_cost);
            }
            return Err(Refusal::ExtraLoad);
        };
        Ok(Admitted { taken_in })
    }

    /// Undoes what [`admit`](Self::admit) took for a hedge that was not
    /// sent after all, or failed on our side: its place in the host's share
    /// of hedged requests and its tokens.
    pub(crate) fn withdraw(
        &self,
        admitted: Admitted,
        stats: &HostStats,
        budget: Option<&RetryBudget>,
    ) {
        stats.hedged().give_back(admitted.taken_in, Instant::now());
        if let Some(budget) = budget {
            budget.refund_hedge(self.config.hedge_cost);
        }
    }
}

impl HostStats {
    /// Adds a latency sample of the host: an answer's, or the time a first
    /// attempt had taken when a hedge's answer beat it (a lower bound).
    pub(crate) fn record(&self, latency: Duration) {
        self.latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(Instant::now(), latency);
    }

    fn estimate(&self, now: Instant) -> Option<Estimate> {
        self.latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .estimate(now)
    }

    fn hedged(&self) -> std::sync::MutexGuard<'_, FractionCap> {
        self.hedged.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
