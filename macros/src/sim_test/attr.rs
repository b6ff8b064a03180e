//! Parsing the attribute's keys: `seed = N`, `seeds = N`.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::Token;

use crate::expr::{in_words, not_a_key, u64_literal, value_of};

mod kw {
    syn::custom_keyword!(seed);
    syn::custom_keyword!(seeds);
}

/// One `key = value` of the attribute, with the spans of both.
pub(super) struct Entry {
    pub(super) key: Key,
    pub(super) key_span: proc_macro2::Span,
    pub(super) value: syn::Expr,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Seed,
    Seeds,
}

/// The keys' names, in the order errors list them.
const KEYS: [&str; 2] = [Key::Seed.name(), Key::Seeds.name()];

impl Key {
    pub(super) const fn name(self) -> &'static str {
        match self {
            Key::Seed => "seed",
            Key::Seeds => "seeds",
        }
    }

    /// The key with a value, as an error shows it.
    fn example(self) -> &'static str {
        match self {
            Key::Seed => "seed = 42",
            Key::Seeds => "seeds = 100",
        }
    }
}

/// The attribute as written: its entries in order, duplicates included.
pub(super) struct Attr {
    pub(super) entries: Vec<Entry>,
}

impl Attr {
    pub(super) fn parse_terminated(input: ParseStream<'_>) -> syn::Result<Self> {
        let entries = Punctuated::<Entry, Token![,]>::parse_terminated(input)?;
        Ok(Self {
            entries: entries.into_iter().collect(),
        })
    }
}

impl Parse for Entry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        let (key, key_span) = if lookahead.peek(kw::seed) {
            (Key::Seed, input.parse::<kw::seed>()?.span)
        } else if lookahead.peek(kw::seeds) {
            (Key::Seeds, input.parse::<kw::seeds>()?.span)
        } else if input.peek(syn::Ident::peek_any) {
            // A keyword too (`crate = ..`, a `#[tokio::test]` habit).
            let unknown = input.call(syn::Ident::parse_any)?;
            return Err(syn::Error::new_spanned(
                &unknown,
                format!("unknown key `{unknown}`; use {}", in_words(&KEYS, "or")),
            ));
        } else {
            return Err(not_a_key(input, &KEYS, Key::Seed.example()));
        };
        let value = value_of(input, key.name(), key_span, key.example())?;
        Ok(Self {
            key,
            key_span,
            value,
        })
    }
}

/// The value of `entry` as an integer literal of type `u64`.
pub(super) fn int_value(entry: &Entry) -> syn::Result<u64> {
    u64_literal(entry.key.name(), entry.key.example(), &entry.value, None).map(|(value, _)| value)
}
