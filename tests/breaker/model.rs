//! A reference model of the breaker's half-open rounds and the strategies
//! that drive it.

use super::*;

#[derive(Debug, Clone)]
pub(super) enum Op {
    Acquire,
    Success(Index),
    Failure(Index),
    Drop(Index),
    Advance(Duration),
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Acquire),
        2 => any::<Index>().prop_map(Op::Success),
        2 => any::<Index>().prop_map(Op::Failure),
        2 => any::<Index>().prop_map(Op::Drop),
        2 => (0..15_000_u64).prop_map(|ms| Op::Advance(Duration::from_millis(ms))),
    ]
}

pub(super) fn small_config() -> impl Strategy<Value = BreakerConfig> {
    (
        (1..=5_u64, prop::sample::select(vec![1, 2, 4, 5, 10])),
        prop::sample::select(vec![0.1, 0.5, 1.0]),
        prop::sample::select(vec![0.5, 1.0]),
        (1..=5_u32, 1..=10_u64, 1..=4_u32),
        (0..=3_u64, any::<bool>()),
    )
        .prop_map(
            |(
                (window_secs, window_buckets),
                failure_ratio_threshold,
                slow_call_rate_threshold,
                (minimum_sample_count, open_secs, half_open_trials),
                (slow_call_duration_threshold_secs, cancelled_as_failure),
            )| BreakerConfig {
                enabled: true,
                window_secs,
                window_buckets,
                failure_ratio_threshold,
                slow_call_rate_threshold,
                minimum_sample_count,
                open_secs,
                half_open_trials,
                slow_call_duration_threshold_secs,
                cancelled_call_outcome: if cancelled_as_failure {
                    CancelledCallOutcome::Failure
                } else {
                    CancelledCallOutcome::Slow
                },
            },
        )
}

/// A permit the property test holds, with what the test knows about it.
#[derive(Debug)]
pub(super) struct Held {
    permit: Permit,
    /// The half-open round it is a trial of; `None` when admitted closed.
    round: Option<u64>,
    started: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settle {
    Success,
    Failure,
    Drop,
}

/// What the test expects of half-open rounds: the trials admitted so far and
/// how they end. Each time the breaker is seen entering half-open, a new
/// round begins; no round can begin and end unseen, because the state is
/// checked after every step and an open period lasts at least a second.
#[derive(Debug)]
pub(super) struct Rounds {
    config: BreakerConfig,
    last: BreakerState,
    round: u64,
    succeeded: u32,
}

impl Rounds {
    pub(super) fn observe(&mut self, state: BreakerState) {
        if state == BreakerState::HalfOpen && self.last != BreakerState::HalfOpen {
            self.round += 1;
            self.succeeded = 0;
        }
        self.last = state;
    }

    pub(super) fn is_trial(&self, held: &Held) -> bool {
        self.last == BreakerState::HalfOpen && held.round == Some(self.round)
    }

    pub(super) fn trials_in_flight(&self, held: &[Held]) -> u32 {
        let in_flight = held.iter().filter(|held| self.is_trial(held)).count();
        u32::try_from(in_flight).unwrap()
    }

    /// The state expected after `held` settles as `how`, when known.
    pub(super) fn after_settling(&mut self, held: &Held, how: Settle) -> Option<BreakerState> {
        if self.last != BreakerState::HalfOpen {
            return None;
        }
        if !self.is_trial(held) {
            // A call from another round is ignored.
            return Some(BreakerState::HalfOpen);
        }
        let slow = self
            .config
            .slow_call_duration_threshold()
            .is_some_and(|threshold| Instant::now() - held.started > threshold);
        Some(match (how, slow) {
            (Settle::Failure, _) | (_, true) => BreakerState::Open,
            (Settle::Drop, false) => BreakerState::HalfOpen,
            (Settle::Success, false) => {
                self.succeeded += 1;
                if self.succeeded == self.config.half_open_trials {
                    BreakerState::Closed
                } else {
                    BreakerState::HalfOpen
                }
            }
        })
    }
}

pub(super) fn settle(permit: Permit, how: Settle) {
    match how {
        Settle::Success => permit.success(),
        Settle::Failure => permit.failure(),
        Settle::Drop => drop(permit),
    }
}

/// Runs `ops` checking every half-open decision against [`Rounds`], then
/// settles every permit still held, waits one open period, and checks the
/// breaker admits a call and closes after enough good trials.
pub(super) async fn never_stuck(
    config: BreakerConfig,
    ops: Vec<Op>,
    finally: Vec<u8>,
) -> Result<(), TestCaseError> {
    let breaker = CircuitBreaker::new(&config);
    let mut rounds = Rounds {
        config: config.clone(),
        last: BreakerState::Closed,
        round: 0,
        succeeded: 0,
    };
    let mut held: Vec<Held> = Vec::new();
    for op in ops {
        let (index, how) = match op {
            Op::Acquire => {
                rounds.observe(breaker.state());
                let admitted = breaker.try_acquire();
                match rounds.last {
                    BreakerState::Closed => prop_assert!(admitted.is_ok()),
                    BreakerState::Open => {
                        prop_assert!(admitted.as_ref().unwrap_err().retry_in().is_some());
                    }
                    BreakerState::HalfOpen => {
                        let free = rounds.trials_in_flight(&held) + rounds.succeeded
                            < config.half_open_trials;
                        prop_assert_eq!(admitted.is_ok(), free, "half-open admission");
                    }
                }
                if let Ok(permit) = admitted {
                    held.push(Held {
                        permit,
                        round: (rounds.last == BreakerState::HalfOpen).then_some(rounds.round),
                        started: Instant::now(),
                    });
                }
                continue;
            }
            Op::Advance(by) => {
                advance(by).await;
                rounds.observe(breaker.state());
                continue;
            }
            _ if held.is_empty() => continue,
            Op::Success(index) => (index, Settle::Success),
            Op::Failure(index) => (index, Settle::Failure),
            Op::Drop(index) => (index, Settle::Drop),
        };
        let one = held.swap_remove(index.index(held.len()));
        let expected = rounds.after_settling(&one, how);
        settle(one.permit, how);
        let state = breaker.state();
        if let Some(expected) = expected {
            prop_assert_eq!(state, expected, "after a {:?}", how);
        }
        rounds.observe(state);
    }

    let finally = finally.iter().cycle().map(|how| match how % 3 {
        0 => Settle::Success,
        1 => Settle::Failure,
        _ => Settle::Drop,
    });
    for (one, how) in held.into_iter().zip(finally) {
        settle(one.permit, how);
    }
    advance(Duration::from_secs(config.open_secs)).await;
    prop_assert_ne!(breaker.state(), BreakerState::Open);
    prop_assert!(breaker.try_acquire().is_ok());
    for _ in 0..config.half_open_trials {
        if breaker.state() == BreakerState::Closed {
            break;
        }
        let trial = breaker.try_acquire();
        prop_assert!(trial.is_ok(), "a half-open slot leaked");
        trial.unwrap().success();
    }
    prop_assert_eq!(breaker.state(), BreakerState::Closed);
    Ok(())
}
