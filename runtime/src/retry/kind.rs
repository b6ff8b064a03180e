//! [`RetryKind`]: why a retry is being made, which decides its price.

/// Why a retry is being made; the retry budget charges each kind its own cost.
///
/// A throttling answer (`429`) is the server asking for patience, not a sign
/// it is broken, so a retry after one is cheaper (`throttling_cost`, default
/// 5 tokens) than after a transient failure (`transient_cost`, default 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryKind {
    /// After `500`, `502`, `503`, `504`, a connect error or an attempt timeout.
    Transient,
    /// After `429 Too Many Requests`.
    Throttling,
}
