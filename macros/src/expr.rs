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

/// The error for what stands where a key should: a value with no key
/// before it (the form is `example`), or anything else; `keys` lists the
/// keys in words.
pub(crate) fn not_a_key(input: ParseStream<'_>, keys: &str, example: &str) -> syn::Error {
    let what = if input.peek(syn::Lit) {
        format!("a value needs its key before it, like `{example}`")
    } else {
        "expected a key".to_owned()
    };
    syn::Error::new(input.span(), format!("{what}; the keys are {keys}"))
}

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
