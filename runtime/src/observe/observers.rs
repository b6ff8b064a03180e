//! [`Observer`] and [`Observers`]: who hears an app's events.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::trace;
use super::Event;

/// Hears every [`Event`] of the app it is installed in.
///
/// `on_event` runs on the request path, inside the decision it reports: keep
/// it synchronous and cheap (count, record, hand off), never block. A panic
/// in it reaches the part that told the event, as any panic does, except
/// while a panic already unwinds (a call dropped on the way out tells its
/// end): that second panic is dropped, not left to abort the process.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use timebox::config::Config;
/// use timebox::observe::{Event, Observer};
///
/// #[derive(Debug, Default)]
/// struct SkippedRetries(AtomicU64);
///
/// impl Observer for SkippedRetries {
///     fn on_event(&self, event: &Event) {
///         if let Event::RetrySkipped { .. } = event {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let config = Config::default().observed_by(SkippedRetries::default());
/// assert_eq!(config.observers.len(), 1);
/// ```
pub trait Observer: Send + Sync + 'static {
    /// Called once for each event, in the order the app made its decisions.
    fn on_event(&self, event: &Event);
}

impl<O: Observer + ?Sized> Observer for Arc<O> {
    fn on_event(&self, event: &Event) {
        (**self).on_event(event);
    }
}

/// The observers of one app: every part built from one
/// [`Config`](crate::config::Config) (its servers' layers, clients,
/// breakers, budgets, streams and shutdown) tells them its events, and no
/// other app's.
///
/// Empty by default, and then an event costs one branch and the `tracing`
/// sink's cached check: it is never built unless a subscriber listens at
/// `timebox::observe` `DEBUG`.
/// Cheap to clone (an `Arc` inside). Two `Observers` are equal when they
/// hold the same observers.
#[derive(Clone, Default)]
pub struct Observers {
    list: Option<Arc<[Arc<dyn Observer>]>>,
}

impl Observers {
    /// No observers.
    #[must_use]
    pub const fn new() -> Self {
        Self { list: None }
    }

    /// These observers and `observer`, told last.
    #[must_use]
    pub fn with(self, observer: impl Observer) -> Self {
        self.with_arc(Arc::new(observer))
    }

    /// These observers and `observer`, unless it is among them already (the
    /// same `Arc`).
    #[must_use]
    pub fn with_arc(self, observer: Arc<dyn Observer>) -> Self {
        let mut list: Vec<_> = self.list.as_deref().unwrap_or_default().to_vec();
        if list.iter().any(|known| same(known, &observer)) {
            return self;
        }
        list.push(observer);
        Self {
            list: Some(list.into()),
        }
    }

    /// These observers and those of `other` that are not among them.
    #[must_use]
    pub fn joined(self, other: &Self) -> Self {
        other
            .list
            .as_deref()
            .unwrap_or_default()
            .iter()
            .fold(self, |joined, observer| {
                joined.with_arc(Arc::clone(observer))
            })
    }

    /// How many observers there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.as_deref().map_or(0, <[_]>::len)
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_none()
    }

    /// Tells the event `make` builds to the `tracing` sink and every
    /// observer; builds nothing when no one listens.
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> Event) {
        let traced = trace::enabled();
        if self.list.is_none() && !traced {
            return;
        }
        self.tell(&make(), traced);
    }

    fn tell(&self, event: &Event, traced: bool) {
        if std::thread::panicking() {
            return self.tell_unwinding(event, traced);
        }
        if traced {
            trace::event(event);
        }
        for observer in self.list.as_deref().unwrap_or_default() {
            observer.on_event(event);
        }
    }

    /// Tells an event raised while a panic unwinds (a permit or a call
    /// dropped on the way out tells its end). A second panic then, of an
    /// observer or of a subscriber, would abort the process: each is caught
    /// and dropped instead, and the first panic goes on to its caller.
    #[cold]
    fn tell_unwinding(&self, event: &Event, traced: bool) {
        if traced {
            let _ = catch_unwind(AssertUnwindSafe(|| trace::event(event)));
        }
        for observer in self.list.as_deref().unwrap_or_default() {
            let _ = catch_unwind(AssertUnwindSafe(|| observer.on_event(event)));
        }
    }

    /// Whether anyone listens, an observer or the `tracing` sink: the parts
    /// that must prepare something for their events (a bounded label) or
    /// keep them in order (the breaker) ask first.
    #[inline]
    pub(crate) fn is_listening(&self) -> bool {
        self.list.is_some() || trace::enabled()
    }
}

fn same(a: &Arc<dyn Observer>, b: &Arc<dyn Observer>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

impl PartialEq for Observers {
    fn eq(&self, other: &Self) -> bool {
        match (&self.list, &other.list) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| same(a, b))
            }
            _ => false,
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers")
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Observers;

    /// O2: with no observer and no `tracing` subscriber that wants the
    /// events, an event is not even built.
    #[test]
    fn with_no_one_listening_no_event_is_built() {
        Observers::default().emit(|| panic!("an event built for no one"));
    }
}
