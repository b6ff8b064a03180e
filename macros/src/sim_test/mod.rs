//! `#[sim_test]`: parse the attribute and the function, validate both, expand.

mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::errors::with_item;

/// The expansion of `#[sim_test]` with `args` on `item`: a `#[test]` that
/// runs it under each seed, or, when something is wrong, the function as
/// it was with the errors beside it.
pub(crate) fn sim_test(args: TokenStream, item: TokenStream) -> TokenStream {
    let function: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let err = syn::Error::new_spanned(
                &item,
                "`#[sim_test]` goes on an `async fn` that takes the `Sim`: `async fn name(sim: Sim)`",
            );
            return with_item(err, item);
        }
    };
    let attr = syn::parse::Parser::parse2(attr::Attr::parse_terminated, args);
    match valid::validate(attr, &function) {
        Ok(test) => expand::expand(&test, &function),
        Err(err) => with_item(err, function.into_token_stream()),
    }
}
