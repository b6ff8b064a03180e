//! Attribute values as the macros read them.

use syn::Expr;

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
