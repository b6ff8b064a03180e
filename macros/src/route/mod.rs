//! `#[get]`, `#[post]`, ..: parse the attribute and the handler, validate
//! both, expand to the handler and its hidden companion.

mod attr;
mod expand;
mod handler;
mod method;
mod valid;

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::errors::with_item;

pub(crate) use method::Method;

/// The expansion of the route attribute `method` with `args` on `item`:
/// the handler and its hidden companion, or, when something is wrong, the
/// handler as it was with the errors beside it.
pub(crate) fn route(method: Method, args: TokenStream, item: TokenStream) -> TokenStream {
    let name = method.attribute();
    let function: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let err = syn::Error::new_spanned(
                &item,
                format!(
                    "`#[{name}]` goes on an `async fn` handler, like `async fn name() -> impl IntoResponse`"
                ),
            );
            return with_item(err, item);
        }
    };
    let attr = syn::parse::Parser::parse2(attr::Attr::parse, args);
    match valid::validate(method, attr, &function) {
        Ok(route) => expand::expand(&route, &function),
        Err(err) => {
            let mut tokens = with_item(err, function.to_token_stream());
            // A companion all the same, so `routes![..]` naming the handler
            // does not fail a second time; another route attribute on the
            // handler defines it when it expands, and a method (`self`) sits
            // in an `impl`, where no struct can go.
            if !handler::has_route_attribute(&function) && function.sig.receiver().is_none() {
                tokens.extend(expand::fallback(&function));
            }
            tokens
        }
    }
}
