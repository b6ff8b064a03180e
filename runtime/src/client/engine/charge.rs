//! [`Charge`]: the tokens a retry holds until it is sent.

use crate::retry::{RetryBudget, RetryKind};

/// Tokens withdrawn for a retry. Dropped before the retry was sent (the call
/// was cancelled during its backoff), they go back to the bucket.
pub(super) struct Charge {
    pub(super) budget: RetryBudget,
    pub(super) kind: RetryKind,
    pub(super) sent: bool,
}

impl Charge {
    pub(super) fn refund(mut self) -> RetryBudget {
        self.budget.refund(self.kind);
        self.sent = true; // refunded once: the drop below must not again
        self.budget.clone()
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if !self.sent {
            self.budget.refund(self.kind);
        }
    }
}
