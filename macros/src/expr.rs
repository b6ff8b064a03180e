//! Attribute values as the macros read them.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Expr, LitStr, Token};

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
/// before it (the form is `example`), or anything else; `keys` are the
/// macro's keys.
pub(crate) fn not_a_key(input: ParseStream<'_>, keys: &[&str], example: &str) -> syn::Error {
    let what = if input.peek(syn::Lit) {
        format!("a value needs its key before it, like `{example}`")
    } else {
        "expected a key".to_owned()
    };
    syn::Error::new(
        input.span(),
        format!("{what}; the keys are {}", in_words(keys, "and")),
    )
}

/// `keys` as a sentence says them: `` `a`, `b` and `c` `` (or `or`).
pub(crate) fn in_words(keys: &[&str], and: &str) -> String {
    match keys {
        [] => String::new(),
        [only] => format!("`{only}`"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|key| format!("`{key}`")).collect();
            format!("{} {and} `{last}`", init.join(", "))
        }
    }
}

/// The error for a number written as a string, `key = "5000"`: drop the
/// quotes, when it holds one, else write one like `example`; `fix`, when
/// given, is the key's own advice for this string instead.
pub(crate) fn quoted_number(
    key: &str,
    example: &str,
    text: &LitStr,
    fix: Option<&str>,
) -> syn::Error {
    let value = text.value();
    let value = value.trim();
    let fix = match fix {
        Some(fix) => fix.to_owned(),
        None if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
            format!("write `{key} = {value}`, without the quotes")
        }
        None => format!("write a number, like `{example}`"),
    };
    syn::Error::new_spanned(text, format!("`{key}` takes a number, not a string; {fix}"))
}

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
