//! Attribute values as the macros read them.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Expr, Token};

/// The `= value` after the key `name` (at `key_span`); a key with no `=` or
/// no value is an error that names it and shows the form, `example`.
pub(crate) fn value_of(
    input: ParseStream<'_>,
    name: &str,
    key_span: Span,
    example: &str,
) -> syn::Result<Expr> {
    let missing = || {
        syn::Error::new(
            key_span,
            format!("`{name}` needs a value, like `{example}`"),
        )
    };
    if !input.peek(Token![=]) {
        return Err(missing());
    }
    input.parse::<Token![=]>()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(missing());
    }
    input.parse()
}

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
