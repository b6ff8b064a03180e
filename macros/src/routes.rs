//! `routes![a, b, module::c]`: each handler's path, its last segment
//! turned into the name of the handler's hidden companion.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Ident, Path, Token};

/// The name of the hidden companion of the handler `handler`: a name of
/// its own, so that it shares the type namespace with nothing the user
/// wrote (a crate, a module or a type named as the handler). It keeps the
/// handler name's span, and so its hygiene and the place errors point at.
pub(crate) fn companion_name(handler: &Ident) -> Ident {
    format_ident!("__timebox_route_{}", handler, span = handler.span())
}

pub(crate) fn routes(input: TokenStream) -> TokenStream {
    let handlers = match Punctuated::<Path, Token![,]>::parse_terminated.parse2(input) {
        Ok(handlers) => handlers,
        Err(err) => {
            let message = format!(
                "{err}; `routes!` takes the handlers' paths, as you would call them: `routes![a, b, api::c]`"
            );
            return syn::Error::new(err.span(), message).to_compile_error();
        }
    };
    let routes = handlers.into_iter().map(|mut handler| {
        let span = handler.span();
        if let Some(last) = handler.segments.last_mut() {
            last.ident = companion_name(&last.ident);
        }
        quote_spanned! {span=>
            .route(<#handler as ::timebox::__private::server::RouteDef<_, _>>::route())
        }
    });
    quote! {
        ::timebox::server::Routes::new() #(#routes)*
    }
}
