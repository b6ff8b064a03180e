//! [`Shared`]: the state one breaker's clones and permits share.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::state::Machine;
use super::transition::Transition;
use crate::observe::{BreakerCallOutcome, Event, Label, Observers};

/// The state every clone and every permit of one breaker share.
#[derive(Debug)]
pub(super) struct Shared {
    machine: Mutex<Machine>,
    /// The host the logs name.
    host: Box<str>,
    /// The host the events name (bounded, see `BoundedLabels`).
    label: Label,
    observers: Observers,
}

impl Shared {
    pub(super) fn new(machine: Machine, host: &str, label: Label, observers: Observers) -> Self {
        Self {
            machine: Mutex::new(machine),
            host: host.into(),
            label,
            observers,
        }
    }

    /// The state, also after a panic elsewhere poisoned the lock: no code
    /// panics while holding it, so the state is never half-updated.
    fn lock(&self) -> MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `step` on the state, then logs and tells the change of state it
    /// made, if any, once the lock is released.
    pub(super) fn run<R>(&self, step: impl FnOnce(&mut Machine) -> R) -> R {
        let (result, transition) = self.step(step);
        self.tell(transition);
        result
    }

    /// Runs `step` on the state; the change of state it made is the
    /// caller's to [`tell`](Self::tell).
    pub(super) fn step<R>(&self, step: impl FnOnce(&mut Machine) -> R) -> (R, Option<Transition>) {
        let mut machine = self.lock();
        let result = step(&mut machine);
        (result, machine.take_transition())
    }

    /// Logs and tells a change of state.
    pub(super) fn tell(&self, transition: Option<Transition>) {
        if let Some(transition) = transition {
            transition.log(&self.host);
            let (from, to) = transition.states();
            self.observers.emit(|| Event::BreakerTransition {
                host: self.label.clone(),
                from,
                to,
            });
        }
    }

    /// Tells how a call was counted.
    pub(super) fn told(&self, outcome: BreakerCallOutcome) {
        self.observers.emit(|| Event::BreakerCall {
            host: self.label.clone(),
            outcome,
        });
    }
}
