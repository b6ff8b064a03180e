//! [`AlreadyRegistered`]: the error of registering a live id twice.

use std::error::Error;
use std::fmt;

/// A request with this id is already registered and its guard is alive.
///
/// Returned by [`Registry::register`](super::Registry::register) instead of
/// replacing the live entry: a silent replace would orphan the first
/// request's token, so it could no longer be cancelled by id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AlreadyRegistered {
    id: String,
}

impl AlreadyRegistered {
    pub(super) const fn new(id: String) -> Self {
        Self { id }
    }

    /// The id that was already registered.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The id that was already registered, by value.
    #[must_use]
    pub fn into_id(self) -> String {
        self.id
    }
}

impl fmt::Display for AlreadyRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request id `{}` is already registered", self.id)
    }
}

impl Error for AlreadyRegistered {}
