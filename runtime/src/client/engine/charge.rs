//! [`Charge`]: the tokens a retry holds until it is sent.

use crate::observe::Label;
use crate::retry::{RetryBudget, RetryKind};

/// Tokens withdrawn for a retry. Dropped before the retry was sent (the call
/// was cancelled during its backoff), they go back to the bucket.
pub(super) struct Charge {
    pub(super) budget: RetryBudget,
    /// The budget's host in events (when someone listens): the host the
    /// retry went to, which a redirect may have left since.
    pub(super) host: Option<Label>,
    pub(super) kind: RetryKind,
    pub(super) sent: bool,
}

impl Charge {
    /// Gives the tokens back: the budget, and its host in events.
    pub(super) fn refund(mut self) -> (RetryBudget, Option<Label>) {
        self.budget.refund(self.kind);
        self.sent = true; // refunded once: the drop below must not again
        (self.budget.clone(), self.host.take())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if !self.sent {
            self.budget.refund(self.kind);
        }
    }
}
