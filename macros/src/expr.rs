//! Attribute values as the macros read them.

use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitStr, Token, UnOp};

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

/// The value of the key `key` (shown in errors as `example`) as an
/// integer literal that fits a `u64`, and its span: the one check of both
/// macros' integer keys. A string is [`quoted_number`]'s error, with
/// `quoted_fix` as its advice when given.
pub(crate) fn u64_literal(
    key: &str,
    example: &str,
    value: &Expr,
    quoted_fix: Option<&str>,
) -> syn::Result<(u64, Span)> {
    let literal = match ungroup(value) {
        Expr::Lit(ExprLit {
            lit: Lit::Int(literal),
            ..
        }) => literal,
        Expr::Lit(ExprLit {
            lit: Lit::Float(_), ..
        }) => {
            return Err(syn::Error::new_spanned(
                value,
                format!("`{key}` takes a whole number, like `{example}`"),
            ))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => return Err(quoted_number(key, example, text, quoted_fix)),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => {
            return Err(syn::Error::new_spanned(
                value,
                format!("`{key}` cannot be negative; write a whole number, like `{example}`"),
            ))
        }
        Expr::Path(_) => {
            return Err(syn::Error::new_spanned(
                value,
                format!(
                    "`{key}` takes an integer literal, like `{example}`; the macro cannot read a \
                     constant"
                ),
            ))
        }
        _ => {
            return Err(syn::Error::new_spanned(
                value,
                format!("`{key}` takes an integer literal, like `{example}`"),
            ))
        }
    };
    if !matches!(literal.suffix(), "" | "u64") {
        return Err(syn::Error::new_spanned(
            literal,
            format!(
                "`{key}` takes a plain integer; remove the `{}` suffix",
                literal.suffix()
            ),
        ));
    }
    let parsed = literal.base10_parse::<u64>().map_err(|_| {
        syn::Error::new_spanned(
            literal,
            format!("`{key}` must fit in a u64 (at most {})", u64::MAX),
        )
    })?;
    Ok((parsed, literal.span()))
}

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
