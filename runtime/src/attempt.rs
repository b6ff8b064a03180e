//! [`Attempt`]: which request of a call this is, in its extensions.

/// Which request of a call an attempt is: the call engine puts one into the
/// extensions of every request it sends, whichever door the call came
/// through (`Client`, the reqwest middleware, `ClientLayer`), and attempt
/// events carry it. It is at `timebox::client` and [`timebox::observe`](crate::observe).
///
/// A tracing middleware or an inner service reads it to name its span or
/// count retries:
///
/// ```
/// use timebox::observe::{Attempt, AttemptKind};
///
/// fn span_name(extensions: &http::Extensions) -> &'static str {
///     match extensions.get::<Attempt>().map(|attempt| attempt.kind) {
///         Some(AttemptKind::Retry) => "retry",
///         Some(AttemptKind::Redirect) => "redirect",
///         _ => "request",
///     }
/// }
/// # assert_eq!(span_name(&http::Extensions::new()), "request");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// The position of this request among those the call sent, from 1:
    /// every retry and every redirect hop counts.
    pub number: u32,
    /// Why the request is sent.
    pub kind: AttemptKind,
}

/// Why the call engine sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttemptKind {
    /// The call's first request.
    First,
    /// A retry after a failed attempt.
    Retry,
    /// A second request sent beside a first one that is slow to answer
    /// (`http.client.hedge`): the first answer wins, the other is
    /// dropped.
    Hedge,
    /// The next hop of a redirect the engine follows.
    Redirect,
}

impl Attempt {
    /// The `number`th request of a call, sent for `kind`; the same as
    /// `Attempt { number, kind }`.
    #[must_use]
    pub const fn new(number: u32, kind: AttemptKind) -> Self {
        Self { number, kind }
    }
}

impl AttemptKind {
    /// A stable `snake_case` name: `"first"`, `"retry"`, `"hedge"` or
    /// `"redirect"`, for
    /// logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Retry => "retry",
            Self::Hedge => "hedge",
            Self::Redirect => "redirect",
        }
    }
}
