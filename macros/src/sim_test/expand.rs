//! The expansion of a validated `#[sim_test]`; it never fails.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::valid::SimTest;

/// A `#[test]` that hands the user's function, unchanged but for its
/// attributes, to the simulation runner.
pub(super) fn expand(test: &SimTest, function: &syn::ItemFn) -> TokenStream {
    let syn::ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let name = &sig.ident;
    let seed = option(test.seed);
    let seeds = option(test.seeds);
    let run = quote_spanned! {sig.ident.span()=>
        ::timebox::__private::sim::run(
            ::timebox::__private::sim::Test {
                package: ::core::env!("CARGO_PKG_NAME"),
                path: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#name)),
                seed: #seed,
                seeds: #seeds,
            },
            #name,
        );
    };
    quote! {
        #(#attrs)*
        #[::core::prelude::v1::test]
        #vis fn #name() {
            #sig #block
            #run
        }
    }
}

fn option(value: Option<u64>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}
