//! [`Recording`]: an observer that keeps every event, for tests.

use std::sync::{Arc, Mutex, PoisonError};

use super::{Event, Observer};

/// An observer that keeps every event it hears, in order.
///
/// Clones share one record, so a test installs one clone and reads the
/// other. `#[sim_test]` installs one for each run: see `Sim::observed`
/// (feature `sim`).
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
/// use timebox::observe::Recording;
///
/// let recording = Recording::new();
/// let config = Config::default().observed_by(recording.clone());
/// # let _ = config;
/// assert!(recording.events().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Recording {
    events: Arc<Mutex<Vec<Event>>>,
}

impl Recording {
    /// An empty record.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The events heard so far, in order.
    #[must_use]
    pub fn events(&self) -> Vec<Event> {
        self.lock().clone()
    }

    /// Forgets the events heard so far.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        // A poisoned lock means a test panicked while pushing; the list is
        // whole either way.
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Observer for Recording {
    fn on_event(&self, event: &Event) {
        self.lock().push(event.clone());
    }
}
