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
        let message = unit_fix(key, literal).unwrap_or_else(|| {
            format!(
                "`{key}` takes a plain integer; remove the `{}` suffix",
                literal.suffix()
            )
        });
        return Err(syn::Error::new_spanned(literal, message));
    }
    let parsed = literal.base10_parse::<u64>().map_err(|_| {
        syn::Error::new_spanned(
            literal,
            format!("`{key}` must fit in a u64 (at most {})", u64::MAX),
        )
    })?;
    Ok((parsed, literal.span()))
}

/// For a key in milliseconds (`…_ms`) given a number with a unit of time
/// as its suffix (`5s`, `2min`), the error that gives the same time in
/// milliseconds, so that removing the suffix does not turn 5 seconds into
/// 5 milliseconds.
fn unit_fix(key: &str, literal: &syn::LitInt) -> Option<String> {
    if !key.ends_with("_ms") {
        return None;
    }
    let time = Time::of(literal)?;
    Some(match time.millis {
        _ if time.unit == Unit::Milli => format!(
            "`{key}` is in milliseconds already; remove the `{}` suffix",
            literal.suffix()
        ),
        Some(millis) => format!("`{key}` is in milliseconds: write `{key} = {millis}` for {time}"),
        None if matches!(time.unit, Unit::Nano | Unit::Micro) => {
            format!("`{key}` is in whole milliseconds, and {time} is not a whole number of them")
        }
        None => format!("`{key}` is in milliseconds, and {time} is more of them than a u64 holds"),
    })
}

/// A unit of time a number may be written with as its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Nano,
    Micro,
    Milli,
    Second,
    Minute,
    Hour,
}

impl Unit {
    /// The unit a suffix names, in any case: `s`, `sec`, `secs`,
    /// `second`, `seconds`, and so on for `ns`, `us`, `ms`, `m`/`min`, `h`/`hr`.
    fn of(suffix: &str) -> Option<Self> {
        Some(match suffix.to_ascii_lowercase().as_str() {
            "ns" | "nanos" | "nanosecond" | "nanoseconds" => Self::Nano,
            "us" | "µs" | "micros" | "microsecond" | "microseconds" => Self::Micro,
            "ms" | "millis" | "millisecond" | "milliseconds" => Self::Milli,
            "s" | "sec" | "secs" | "second" | "seconds" => Self::Second,
            "m" | "min" | "mins" | "minute" | "minutes" => Self::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" => Self::Hour,
            _ => return None,
        })
    }

    /// Its name, for `count` of it.
    fn name(self, count: u64) -> String {
        let name = match self {
            Self::Nano => "nanosecond",
            Self::Micro => "microsecond",
            Self::Milli => "millisecond",
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
        };
        if count == 1 {
            name.to_owned()
        } else {
            format!("{name}s")
        }
    }
}

/// A time written as a number with a unit as its suffix (`5s`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Time {
    count: u64,
    unit: Unit,
    /// The same time in whole milliseconds, when it is a whole number of
    /// them that fits a `u64`.
    pub(crate) millis: Option<u64>,
}

impl Time {
    /// The time `literal` writes, when its suffix is a unit of time.
    pub(crate) fn of(literal: &syn::LitInt) -> Option<Self> {
        let unit = Unit::of(literal.suffix())?;
        let count = literal.base10_digits().parse::<u64>().ok()?;
        let millis = match unit {
            Unit::Nano => (count % 1_000_000 == 0).then_some(count / 1_000_000),
            Unit::Micro => (count % 1_000 == 0).then_some(count / 1_000),
            Unit::Milli => Some(count),
            Unit::Second => count.checked_mul(1_000),
            Unit::Minute => count.checked_mul(60_000),
            Unit::Hour => count.checked_mul(3_600_000),
        };
        Some(Self {
            count,
            unit,
            millis,
        })
    }
}

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.count, self.unit.name(self.count))
    }
}

/// `value` without the invisible groups a `macro_rules!` fragment wraps
/// it in, so `timeout_ms = $t` or `seed = $s` reads as the literal passed.
pub(crate) fn ungroup(value: &Expr) -> &Expr {
    match value {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}
