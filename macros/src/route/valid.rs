//! Every rule across the attribute and the handler, checked before expansion.

use proc_macro2::Span;
use syn::{Expr, ExprLit, Lit, LitStr};

use super::attr::{Attr, Entry, Key, Path};
use super::handler::validate_fn;
use super::Method;
use crate::errors::{both, Errors};
use crate::expr::{u64_literal, ungroup, Time};

/// A route attribute that passed every check.
pub(super) struct Route {
    pub(super) method: Method,
    pub(super) path: LitStr,
    pub(super) timeout: Timeout,
    /// `min_budget_ms = N`: the service time the deadline check (A1)
    /// compares a request's time left with; never 0, below `timeout_ms`.
    pub(super) min_budget: Option<u64>,
}

/// The route's deadline, as the keys set it.
pub(super) enum Timeout {
    /// No key: `server.timeouts.request_timeout_ms` decides.
    Inherit,
    /// `timeout_ms = N`, never 0.
    Millis(u64),
    /// `timeout = "off"`.
    Off,
}

/// Checks the attribute and the handler, collecting independent errors.
pub(super) fn validate(
    method: Method,
    attr: syn::Result<Attr>,
    function: &syn::ItemFn,
) -> syn::Result<Route> {
    let route = attr.and_then(|attr| validate_attr(method, &attr));
    both(route, validate_fn(method, function)).map(|(route, ())| route)
}

fn validate_attr(method: Method, attr: &Attr) -> syn::Result<Route> {
    let (path, (timeout, min_budget)) = both(
        validate_path(method, &attr.path),
        validate_entries(&attr.entries),
    )?;
    Ok(Route {
        method,
        path,
        timeout,
        min_budget,
    })
}

fn validate_path(method: Method, path: &Path) -> syn::Result<LitStr> {
    let name = method.attribute();
    let literal = match path {
        Path::Literal(literal) => literal,
        Path::Other(tokens) => {
            return Err(syn::Error::new_spanned(
                tokens,
                format!("the path must be a string literal, like `#[{name}(\"/users\")]`"),
            ))
        }
        Path::Missing(span) => {
            return Err(syn::Error::new(
                *span,
                format!("`#[{name}]` needs the route's path first, like `#[{name}(\"/users\")]`"),
            ))
        }
    };
    let value = literal.value();
    if value.is_empty() {
        return Err(syn::Error::new_spanned(
            literal,
            "the path cannot be empty; write `\"/\"` for the root",
        ));
    }
    if !value.starts_with('/') {
        return Err(syn::Error::new_spanned(
            literal,
            format!(
                "the path must start with `/`, like `{:?}`",
                format!("/{value}")
            ),
        ));
    }
    if let Some(fixed) = braced_captures(&value) {
        return Err(syn::Error::new_spanned(
            literal,
            format!(
                "axum writes a capture in braces, `{{id}}` or `{{*rest}}`, not `:id` or \
                 `*rest` (axum 0.7's syntax, which panics when the route is mounted); \
                 write `{fixed:?}`"
            ),
        ));
    }
    if let Some(problem) = capture_problem(&value) {
        return Err(syn::Error::new_spanned(
            literal,
            format!("axum's router would panic mounting this path: {problem}"),
        ));
    }
    if let Some(problem) = unmatchable(&value) {
        return Err(syn::Error::new_spanned(
            literal,
            format!("no request's path would match this route: {problem}"),
        ));
    }
    Ok(literal.clone())
}

/// Each character of `path`, and whether it is a literal brace written
/// twice (`{{`, `}}`, one entry), read first, as the router reads them.
fn characters(path: &str) -> Vec<(char, bool)> {
    let mut chars = Vec::with_capacity(path.len());
    let mut rest = path.chars().peekable();
    while let Some(c) = rest.next() {
        let doubled = matches!(c, '{' | '}') && rest.next_if_eq(&c).is_some();
        chars.push((c, doubled));
    }
    chars
}

/// Why no request would ever match `path`, though axum mounts it: a
/// character outside its captures that a request's path cannot carry as
/// written (hyper refuses it in a request's head, or reads it as the
/// start of the query or the fragment).
fn unmatchable(path: &str) -> Option<String> {
    let chars = characters(path);
    let mut in_capture = false;
    for (at, &(c, doubled)) in chars.iter().enumerate() {
        match c {
            _ if doubled => {}
            '{' => in_capture = true,
            '}' => in_capture = false,
            _ if in_capture => {}
            '?' => {
                return Some(
                    "a request's path ends before its query; take `?..` out and read the \
                     query with axum's `Query` extractor"
                        .to_owned(),
                )
            }
            '#' => {
                return Some(
                    "a request's path never holds a fragment (`#..`): clients do not send it"
                        .to_owned(),
                )
            }
            '<' => {
                let rest: String = chars[at + 1..].iter().map(|&(c, _)| c).collect();
                return Some(match rest.split_once('>') {
                    Some((name, _)) if !name.is_empty() && !name.contains(['/', '{', '}']) => {
                        format!("axum writes a capture in braces: write `{{{name}}}`")
                    }
                    _ => not_in_a_path(c),
                });
            }
            '>' | '`' | ' ' => return Some(not_in_a_path(c)),
            // Only ASCII: hyper takes any other character in a path as it
            // comes, raw UTF-8.
            c if c.is_ascii_whitespace() || c.is_ascii_control() => {
                return Some(format!(
                    "a request's path cannot hold {c:?}; clients send it percent-encoded"
                ))
            }
            _ => {}
        }
    }
    None
}

/// Why `c`, an ASCII character hyper refuses in a request's path, cannot
/// be in a route's path, and how clients send it.
fn not_in_a_path(c: char) -> String {
    let what = if c == ' ' {
        "a space".to_owned()
    } else {
        format!("`{c}`")
    };
    format!(
        "a request's path cannot hold {what}; clients send it percent-encoded, as `%{:02X}`",
        u32::from(c)
    )
}

/// What axum's router (matchit 0.8) refuses in `path`'s captures, said for
/// the user: a capture with no name, or with a `*` inside it, a brace
/// left open in its segment or closed unopened, text after a capture in its segment, a
/// catch-all before the end. `{{` and `}}` are literal braces, read first,
/// as the router reads them.
fn capture_problem(path: &str) -> Option<String> {
    let chars = characters(path);
    let text =
        |from: usize, to: usize| -> String { chars[from..to].iter().map(|&(c, _)| c).collect() };
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            ('}', false) => {
                return Some(
                    "the path has a `}` that closes no capture (write `}}` for a literal brace)"
                        .to_owned(),
                )
            }
            ('{', false) => {
                // Its `}`, before the segment ends.
                let stop = chars[i + 1..]
                    .iter()
                    .position(|&c| c == ('}', false) || c.0 == '/')
                    .map_or(chars.len(), |at| i + 1 + at);
                if chars.get(stop) != Some(&('}', false)) {
                    return Some(format!(
                        "the capture `{}` is not closed with `}}` before its segment ends",
                        text(i, stop)
                    ));
                }
                let close = stop;
                let name = text(i + 1, close);
                let (catch_all, bare) = match name.strip_prefix('*') {
                    Some(bare) => (true, bare),
                    None => (false, name.as_str()),
                };
                if bare.is_empty() {
                    let named = if catch_all { "{*rest}" } else { "{id}" };
                    return Some(format!(
                        "the capture `{{{name}}}` has no name; name it, like `{named}`"
                    ));
                }
                if bare.contains('*') {
                    return Some(format!(
                        "the capture `{{{name}}}` has a `*` in its name; only a catch-all \
                         begins with one, like `{{*rest}}`"
                    ));
                }
                let end = close + 1;
                if catch_all && end < chars.len() {
                    return Some(format!(
                        "the catch-all `{{{name}}}` must end the path; nothing can follow it"
                    ));
                }
                if chars.get(end).is_some_and(|&(next, _)| next != '/') {
                    let segment_end = chars[end..]
                        .iter()
                        .position(|&(c, _)| c == '/')
                        .map_or(chars.len(), |at| end + at);
                    return Some(format!(
                        "the capture `{{{name}}}` must end its segment, and `{}` follows it; \
                         capture the whole segment and split it in the handler",
                        text(end, segment_end)
                    ));
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    None
}

/// `path` with its axum 0.7 captures (`:id`, `*rest`) in braces, if it has
/// any.
fn braced_captures(path: &str) -> Option<String> {
    let mut changed = false;
    let mut nameless = 0;
    let segments: Vec<String> = path
        .split('/')
        .map(|segment| {
            // A capture with no name gets one, a different one each: `{}`
            // and `{*}` are no captures either, and axum refuses a name
            // twice.
            if let Some(name) = segment.strip_prefix(':') {
                changed = true;
                if !name.is_empty() {
                    return format!("{{{name}}}");
                }
                nameless += 1;
                match nameless {
                    1 => "{param}".to_owned(),
                    n => format!("{{param{n}}}"),
                }
            } else if let Some(name) = segment.strip_prefix('*') {
                changed = true;
                let name = if name.is_empty() { "rest" } else { name };
                format!("{{*{name}}}")
            } else {
                segment.to_owned()
            }
        })
        .collect();
    changed.then(|| segments.join("/"))
}

fn validate_entries(entries: &[Entry]) -> syn::Result<(Timeout, Option<u64>)> {
    let mut errors = Errors::default();
    let mut seen: Vec<Key> = Vec::new();
    let mut timeout = Timeout::Inherit;
    let mut min_budget = None;
    let mut min_budget_key = Span::call_site();
    for entry in entries {
        if seen.contains(&entry.key) {
            errors.push(syn::Error::new(
                entry.key_span,
                format!("duplicate key `{}`; set it once", entry.key.name()),
            ));
            continue;
        }
        let deadline_keys = [Key::TimeoutMs, Key::Timeout];
        if deadline_keys.contains(&entry.key) && seen.iter().any(|key| deadline_keys.contains(key))
        {
            errors.push(syn::Error::new(
                entry.key_span,
                "`timeout_ms` and `timeout = \"off\"` cannot both be set; keep one",
            ));
        }
        seen.push(entry.key);
        match entry.key {
            Key::TimeoutMs => {
                if let Some((millis, _)) = errors.take(nonzero_millis(entry, ZERO_TIMEOUT)) {
                    timeout = Timeout::Millis(millis);
                }
            }
            Key::Timeout => {
                if let Some(()) = errors.take(timeout_off(&entry.value)) {
                    timeout = Timeout::Off;
                }
            }
            Key::MinBudgetMs => {
                min_budget = errors.take(nonzero_millis(entry, ZERO_MIN_BUDGET));
                min_budget_key = entry.key_span;
            }
        }
    }
    // With both deadline keys set, which one the route has is the user's
    // to say: `min_budget_ms` is compared with neither.
    let conflict = seen.contains(&Key::TimeoutMs) && seen.contains(&Key::Timeout);
    if let Some((millis, span)) = min_budget.filter(|_| !conflict) {
        match timeout {
            Timeout::Off => errors.push(syn::Error::new(
                min_budget_key,
                "`min_budget_ms` needs a deadline to compare with, and `timeout = \"off\"` has none; remove one of them",
            )),
            Timeout::Millis(timeout_ms) if millis >= timeout_ms => errors.push(syn::Error::new(
                span,
                format!(
                    "`min_budget_ms = {millis}` must be below the route's `timeout_ms = {timeout_ms}`, \
                     or every request would be refused; lower it, or raise `timeout_ms`"
                ),
            )),
            Timeout::Millis(_) | Timeout::Inherit => {}
        }
    }
    errors.finish()?;
    Ok((timeout, min_budget.map(|(millis, _)| millis)))
}

const ZERO_TIMEOUT: &str =
    "`timeout_ms = 0` would refuse every request; use `timeout = \"off\"` for no deadline";
const ZERO_MIN_BUDGET: &str =
    "`min_budget_ms = 0` would never refuse a request; remove it to use the route's measured median";

/// A millisecond value that must not be 0, with `zero` as the error if it is.
///
/// A zero with a unit of time (`0s`, `0ms`) gets `zero` too, rather than
/// the unit's advice: dropping the unit would only lead to this error.
fn nonzero_millis(entry: &Entry, zero: &str) -> syn::Result<(u64, Span)> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Int(literal),
        ..
    }) = ungroup(&entry.value)
    {
        if Time::of(literal).is_some_and(|time| time.millis == Some(0)) {
            return Err(syn::Error::new_spanned(literal, zero));
        }
    }
    let (millis, span) = millis(entry.key, &entry.value)?;
    if millis == 0 {
        return Err(syn::Error::new(span, zero));
    }
    Ok((millis, span))
}

/// The value of a `*_ms` key: an integer literal that fits a `u64`, and
/// the literal's span.
fn millis(key: Key, value: &Expr) -> syn::Result<(u64, Span)> {
    let off = match ungroup(value) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) if key == Key::TimeoutMs && text.value().trim() == "off" => {
            Some("for no deadline write `timeout = \"off\"` instead")
        }
        _ => None,
    };
    u64_literal(key.name(), key.example(), value, off)
}

/// The value of `timeout`: only `"off"`.
fn timeout_off(value: &Expr) -> syn::Result<()> {
    match ungroup(value) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(literal),
            ..
        }) if literal.value() == "off" => Ok(()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(literal),
            ..
        }) => {
            let millis = match Time::of(literal) {
                Some(time) => time.millis.map(|millis| millis.to_string()),
                None => Some(literal.base10_digits().to_owned()),
            };
            let fix = match millis.as_deref() {
                Some("0") => "for no deadline write `timeout = \"off\"`".to_owned(),
                Some(millis) => {
                    format!("for a deadline in milliseconds write `timeout_ms = {millis}`")
                }
                None => "for a deadline write `timeout_ms = N`, in whole milliseconds".to_owned(),
            };
            Err(syn::Error::new_spanned(
                value,
                format!("`timeout` accepts only `\"off\"`; {fix}"),
            ))
        }
        _ => Err(syn::Error::new_spanned(
            value,
            "`timeout` accepts only `\"off\"`; for a deadline write `timeout_ms = N`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{capture_problem, unmatchable};

    #[test]
    fn paths_a_request_can_match_are_matchable() {
        for path in [
            "/",
            "/users/{id}",
            "/files/{*rest}",
            "/caf%C3%A9",
            "/café",
            "/no\u{a0}break",
            "/items/{id?}",
            "/users/{naïve}",
            "/json/\"quoted\"|^\\",
            "/literal/{{braces}}",
            "/a-b_c.d~e!$&'()*+,;=:@",
        ] {
            assert_eq!(unmatchable(path), None, "{path}");
        }
    }

    #[test]
    fn each_path_no_request_matches_is_named_with_its_fix() {
        for (path, said) in [
            (
                "/search?q={q}",
                "read the query with axum's `Query` extractor",
            ),
            ("/docs#intro", "never holds a fragment"),
            ("/users/<id>", "write `{id}`"),
            ("/a<b", "`%3C`"),
            ("/<{id}>", "`%3C`"),
            ("/bell\u{7}", "'\\u{7}'"),
            ("/a/<b/c>", "`%3C`"),
            ("/a>b", "`%3E`"),
            ("/a`b", "`%60`"),
            ("/two words", "as `%20`"),
            ("/a{{b c}}", "as `%20`"),
            ("/tab\there", "'\\t'"),
        ] {
            let problem = unmatchable(path).unwrap_or_default();
            assert!(problem.contains(said), "{path}: {problem}");
        }
    }

    #[test]
    fn paths_axums_router_takes_have_no_capture_problem() {
        for path in [
            "/",
            "/users/{id}",
            "/users/{id}/posts/{post_id}",
            "/files/{*rest}",
            "/v1/file-{name}",
            "/literal/{{braces}}",
            "/odd/{a{b}",
            "/escaped/{a}}b}",
            "/ünïcode/{naïve}",
        ] {
            assert_eq!(capture_problem(path), None, "{path}");
        }
    }

    #[test]
    fn each_capture_axums_router_refuses_is_named() {
        for (path, said) in [
            (
                "/reports/{id}.csv",
                "`{id}` must end its segment, and `.csv` follows",
            ),
            (
                "/files/{*path}/raw",
                "the catch-all `{*path}` must end the path",
            ),
            ("/users/{id", "the capture `{id` is not closed"),
            ("/users/{id/posts", "the capture `{id` is not closed"),
            ("/a/{}", "the capture `{}` has no name"),
            (
                "/a/{*}",
                "the capture `{*}` has no name; name it, like `{*rest}`",
            ),
            ("/a/{x*y}", "`{x*y}` has a `*` in its name"),
            ("/a/b}", "a `}` that closes no capture"),
        ] {
            let problem = capture_problem(path).unwrap_or_default();
            assert!(problem.contains(said), "{path}: {problem}");
        }
    }
}
