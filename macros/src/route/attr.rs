//! Parsing the attribute as written: the path, then `timeout_ms = N`,
//! `timeout = "off"` and `min_budget_ms = N`. What the values mean is `valid`'s job.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{LitStr, Token};

use crate::expr::{in_words, not_a_key, value_of};

mod kw {
    syn::custom_keyword!(timeout_ms);
    syn::custom_keyword!(timeout);
    syn::custom_keyword!(min_budget_ms);
}

/// The attribute as written: the path and the entries in order, duplicates
/// included.
pub(super) struct Attr {
    pub(super) path: Path,
    pub(super) entries: Vec<Entry>,
}

/// The first argument, whatever it is.
pub(super) enum Path {
    /// A string literal, checked further by `valid`.
    Literal(LitStr),
    /// Tokens that are not a string literal, like `PATH` or `/users`.
    Other(TokenStream),
    /// No path: the attribute is empty or starts with a key. The span is the
    /// attribute's, or the first key's.
    Missing(Span),
}

/// One `key = value` of the attribute, with the spans of both.
pub(super) struct Entry {
    pub(super) key: Key,
    pub(super) key_span: Span,
    pub(super) value: syn::Expr,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    TimeoutMs,
    Timeout,
    MinBudgetMs,
}

/// The keys' names, in the order errors list them.
const KEYS: [&str; 3] = [
    Key::TimeoutMs.name(),
    Key::Timeout.name(),
    Key::MinBudgetMs.name(),
];

impl Key {
    pub(super) const fn name(self) -> &'static str {
        match self {
            Key::TimeoutMs => "timeout_ms",
            Key::Timeout => "timeout",
            Key::MinBudgetMs => "min_budget_ms",
        }
    }

    /// The key with a value, as an error shows it.
    pub(super) fn example(self) -> &'static str {
        match self {
            Key::TimeoutMs => "timeout_ms = 5000",
            Key::Timeout => "timeout = \"off\"",
            Key::MinBudgetMs => "min_budget_ms = 50",
        }
    }
}

impl Attr {
    pub(super) fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let path = parse_path(input)?;
        if !matches!(path, Path::Missing(_)) && !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
        let entries = Punctuated::<Entry, Token![,]>::parse_terminated_with(input, parse_entry)?;
        Ok(Self {
            path,
            entries: entries.into_iter().collect(),
        })
    }
}

fn parse_path(input: ParseStream<'_>) -> syn::Result<Path> {
    if input.is_empty() {
        return Ok(Path::Missing(Span::call_site()));
    }
    if input.peek(syn::Ident::peek_any) && input.peek2(Token![=]) {
        return Ok(Path::Missing(input.span()));
    }
    if input.peek(LitStr) {
        return input.parse().map(Path::Literal);
    }
    // Everything up to the first comma, so the error covers all of it.
    let mut other = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        other.extend([input.parse::<proc_macro2::TokenTree>()?]);
    }
    Ok(Path::Other(other))
}

fn parse_entry(input: ParseStream<'_>) -> syn::Result<Entry> {
    let lookahead = input.lookahead1();
    let (key, key_span) = if lookahead.peek(kw::timeout_ms) {
        (Key::TimeoutMs, input.parse::<kw::timeout_ms>()?.span)
    } else if lookahead.peek(kw::timeout) {
        (Key::Timeout, input.parse::<kw::timeout>()?.span)
    } else if lookahead.peek(kw::min_budget_ms) {
        (Key::MinBudgetMs, input.parse::<kw::min_budget_ms>()?.span)
    } else if input.peek(syn::Ident::peek_any) {
        let unknown = input.call(syn::Ident::parse_any)?;
        let message = if unknown == "path" || unknown == "uri" {
            "the route's path comes first, without a key, like `#[get(\"/users\")]`".to_owned()
        } else {
            format!("unknown key `{unknown}`; use {}", in_words(&KEYS, "or"))
        };
        return Err(syn::Error::new_spanned(&unknown, message));
    } else if input.peek(LitStr) && input.fork().parse::<LitStr>()?.value().starts_with('/') {
        // A path where a key belongs: after a key
        // (`#[get(timeout_ms = 5000, "/users")]`), or after the path.
        let path: LitStr = input.parse()?;
        return Err(syn::Error::new_spanned(
            path,
            "a route has one path, and it comes first, before its keys, like \
             `#[get(\"/users\", timeout_ms = 5000)]`",
        ));
    } else {
        return Err(not_a_key(input, &KEYS, Key::TimeoutMs.example()));
    };
    let value = value_of(input, key.name(), key_span, key.example())?;
    Ok(Entry {
        key,
        key_span,
        value,
    })
}
