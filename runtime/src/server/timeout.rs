//! [`RouteTimeout`]: a route's own word on its deadline.

use std::time::Duration;

use crate::observe::DeadlineSource;

/// How one route's deadline is chosen.
///
/// The route macros produce it from their keys: no key is `Inherit`,
/// `timeout_ms = N` is `Override`, `timeout = "off"` is `Off`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use timebox::server::RouteTimeout;
///
/// let global = Some(Duration::from_secs(30)); // `request_timeout_ms = 30000`
/// assert_eq!(RouteTimeout::Inherit.resolve(global), global);
/// // An override may be longer than the global deadline: a route's own
/// // rule replaces it.
/// let report = RouteTimeout::Override(Duration::from_secs(120));
/// assert_eq!(report.resolve(global), Some(Duration::from_secs(120)));
/// assert_eq!(RouteTimeout::Off.resolve(global), None);
/// // With no global deadline, a route that inherits has none.
/// assert_eq!(RouteTimeout::Inherit.resolve(None), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteTimeout {
    /// The global `server.timeouts.request_timeout_ms`, if one is set.
    #[default]
    Inherit,
    /// This route's own deadline, whatever the global one is. A zero
    /// duration is a deadline already spent: every request is answered
    /// at once without running the handler (S4), so the route macros
    /// refuse `timeout_ms = 0`; [`Off`](Self::Off) is no deadline.
    Override(Duration),
    /// No deadline for this route.
    Off,
}

impl RouteTimeout {
    /// Where a deadline this rule resolves to comes from: the global
    /// default for [`RouteTimeout::Inherit`], the route otherwise.
    pub(crate) const fn source(self) -> DeadlineSource {
        match self {
            RouteTimeout::Inherit => DeadlineSource::Global,
            RouteTimeout::Override(_) | RouteTimeout::Off => DeadlineSource::Route,
        }
    }

    /// The deadline this route resolves to, given the global one.
    #[must_use]
    pub fn resolve(self, global: Option<Duration>) -> Option<Duration> {
        match self {
            RouteTimeout::Inherit => global,
            RouteTimeout::Override(timeout) => Some(timeout),
            RouteTimeout::Off => None,
        }
    }
}
