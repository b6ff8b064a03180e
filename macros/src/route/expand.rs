//! The expansion of a validated route attribute; it never fails.
//!
//! The handler stays exactly as written, so it can be called directly. Next
//! to it goes a braced struct with the same name: a braced struct lives only
//! in the type namespace, so it does not clash with the fn, and
//! `timebox::routes![handler]` finds it by the handler's path. The struct
//! implements `RouteDef<S>`, whose `route()` wraps the handler in a fn that
//! maps its output to a response (a deadline error becomes a 504) and
//! registers that fn with the method, path and timeout.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ReturnType, Type};

use super::valid::{Route, Timeout};

pub(super) fn expand(route: &Route, function: &syn::ItemFn) -> TokenStream {
    let syn::ItemFn {
        attrs, vis, sig, ..
    } = function;
    let name = &sig.ident;
    // The companion exists exactly when the handler does, and the user's
    // `allow`s cover the wrapper, which repeats the handler's types.
    let shared_attrs = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("allow"));
    let shared_attrs = quote!(#(#shared_attrs)*);
    // A deprecated handler warns where `routes!` names it, not in the impl
    // that calls it.
    let deprecated = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("deprecated"));

    let args: Vec<(syn::Ident, &Type)> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(input) => Some(&*input.ty),
            FnArg::Receiver(_) => None,
        })
        .enumerate()
        .map(|(index, ty)| (format_ident!("__arg{index}"), ty))
        .collect();
    let params = args.iter().map(|(arg, ty)| quote!(#arg: #ty));
    let arg_names: Vec<&syn::Ident> = args.iter().map(|(arg, _)| arg).collect();

    // The bounds axum's `Handler` impl for async fns puts on the arguments:
    // every one but the last is `FromRequestParts`, the last `FromRequest`
    // with axum's marker `M`. With them the handler itself, unboxed, is the
    // route's handler. A handler without arguments has no marker: `M = ()`.
    let arg_types: Vec<&Type> = args.iter().map(|(_, ty)| *ty).collect();
    let (marker, extractor_bounds) = match arg_types.split_last() {
        None => (quote!(()), quote!()),
        Some((last, init)) => (
            quote!(__TimeboxExtractors),
            quote! {
                #(#init: ::timebox::__private::server::FromRequestParts<__TimeboxState>
                    + ::core::marker::Send,)*
                #last: ::timebox::__private::server::FromRequest<__TimeboxState, __TimeboxExtractors>
                    + ::core::marker::Send,
            },
        ),
    };
    let marker_param = if arg_types.is_empty() {
        quote!()
    } else {
        quote!(, __TimeboxExtractors: 'static)
    };
    let output_span = match &sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => name.span(),
    };
    let respond = quote_spanned! {output_span=>
        (&::timebox::__private::server::Respond::new(output)).timebox_respond()
    };

    // An argument that is not an extractor, or a future that is not `Send`,
    // fails here: point at the handler's name.
    let method = syn::Ident::new(route.method.constant(), Span::call_site());
    let path = &route.path;
    let timeout = timeout(&route.timeout);
    let register = quote_spanned! {name.span()=>
        ::timebox::server::Route::new(
            ::timebox::__private::server::Method::#method,
            #path,
            #timeout,
            __timebox_handler,
        )
    };

    quote! {
        #function

        #shared_attrs
        #(#deprecated)*
        #[doc(hidden)]
        #[allow(
            dead_code,
            non_camel_case_types,
            missing_docs,
            missing_debug_implementations,
            unreachable_pub
        )]
        #vis struct #name {}

        #shared_attrs
        #[allow(deprecated)]
        impl<__TimeboxState #marker_param>
            ::timebox::__private::server::RouteDef<__TimeboxState, #marker> for #name
        where
            __TimeboxState: ::core::clone::Clone
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static,
            #extractor_bounds
        {
            fn route() -> ::timebox::server::Route<__TimeboxState> {
                async fn __timebox_handler(#(#params),*) -> ::timebox::__private::server::Response {
                    use ::timebox::__private::server::{ViaDeadlineError as _, ViaIntoResponse as _};
                    // Taken as a value, as in axum's `get(handler)`, so
                    // clippy's `unused_async` treats it as a handler.
                    let handler = #name;
                    let output = handler(#(#arg_names),*).await;
                    #respond
                }
                #register
            }
        }
    }
}

fn timeout(timeout: &Timeout) -> TokenStream {
    match timeout {
        Timeout::Inherit => quote!(::timebox::server::RouteTimeout::Inherit),
        Timeout::Millis(millis) => quote! {
            ::timebox::server::RouteTimeout::Override(
                ::core::time::Duration::from_millis(#millis)
            )
        },
        Timeout::Off => quote!(::timebox::server::RouteTimeout::Off),
    }
}
