//! [`Shared`]: the state one breaker's clones and permits share.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::state::Machine;

/// The state every clone and every permit of one breaker share.
#[derive(Debug)]
pub(super) struct Shared {
    machine: Mutex<Machine>,
    /// The host the logs name.
    host: Box<str>,
}

impl Shared {
    pub(super) fn new(machine: Machine, host: &str) -> Self {
        Self {
            machine: Mutex::new(machine),
            host: host.into(),
        }
    }

    /// The state, also after a panic elsewhere poisoned the lock: no code
    /// panics while holding it, so the state is never half-updated.
    fn lock(&self) -> MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `step` on the state, then logs the change of state it made, if
    /// any, once the lock is released.
    pub(super) fn run<R>(&self, step: impl FnOnce(&mut Machine) -> R) -> R {
        let (result, transition) = {
            let mut machine = self.lock();
            let result = step(&mut machine);
            (result, machine.take_transition())
        };
        if let Some(transition) = transition {
            transition.log(&self.host);
        }
        result
    }
}
