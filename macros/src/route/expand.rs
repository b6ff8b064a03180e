//! The expansion of a validated route attribute; it never fails.
//!
//! The handler stays exactly as written, so it can be called directly. Next
//! to it goes a braced struct with the same name: a braced struct lives only
//! in the type namespace, so it does not clash with the fn, and
//! `timebox::routes![handler]` finds it by the handler's path. The struct
//! implements `RouteDef<S>`, whose `route()` wraps the handler in a fn that
//! maps its output to a response (a deadline error becomes a 504) and
//! registers that fn with the method, path and timeout. Everything it names
//! of the runtime is under `::timebox::__private`.

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
    // Each bound carries its argument's span, so an argument that is not an
    // extractor is named where the bound is introduced.
    let (marker, extractor_bounds) = match arg_types.split_last() {
        None => (quote!(()), quote!()),
        Some((last, init)) => {
            let init = init.iter().map(|ty| {
                quote_spanned! {ty.span()=>
                    #ty: ::timebox::__private::server::FromRequestParts<__TimeboxState>
                        + ::core::marker::Send,
                }
            });
            let last = quote_spanned! {last.span()=>
                #last: ::timebox::__private::server::FromRequest<__TimeboxState, __TimeboxExtractors>
                    + ::core::marker::Send,
            };
            (quote!(__TimeboxExtractors), quote!(#(#init)* #last))
        }
    };
    let marker_param = if arg_types.is_empty() {
        quote!()
    } else {
        quote!(, __TimeboxExtractors: 'static)
    };
    // The expansion's own variables take the hygiene of the handler's name,
    // which the tokens that use them carry (so errors point at the user's
    // code): a name that came through a `macro_rules!` argument has another
    // hygiene than the attribute, and would not see variables made with
    // the attribute's.
    let future = syn::Ident::new("future", name.span());
    let output_span = match &sig.output {
        ReturnType::Type(_, ty) => name.span().located_at(ty.span()),
        ReturnType::Default => name.span(),
    };
    let output = syn::Ident::new("output", output_span);
    let respond = quote_spanned! {output_span=>
        (&#output).timebox_kind().respond(#output)
    };

    // axum serves handlers whose future is `Send`; say so at the handler's
    // name, with rustc's account of what is held across which `.await`.
    // The future passes through by value, not borrowed from a local: a
    // local held across the `.await` makes the state of a handler without
    // arguments one that starts all zeros, which the compiler then
    // allocates zeroed (`calloc`, outside the allocator's thread cache),
    // a cost a plain axum handler does not pay.
    let must_be_send = quote_spanned! {name.span()=>
        ::timebox::__private::server::handler_future_must_be_send(#future)
    };

    // The registration carries the handler name's span: whatever rustc
    // says of it points at the handler (an argument that is not an
    // extractor fails earlier, at the bounds above, where `routes!` names
    // the handler).
    let method = syn::Ident::new(route.method.constant(), Span::call_site());
    let path = &route.path;
    let timeout = timeout(&route.timeout);
    let min_budget = route.min_budget.map(|millis| {
        quote! {
            .min_budget(::core::time::Duration::from_millis(#millis))
        }
    });
    let register = quote_spanned! {name.span()=>
        ::timebox::__private::server::Route::new(
            ::timebox::__private::server::Method::#method,
            #path,
            #timeout,
            __timebox_handler,
        )
        #min_budget
    };

    let companion = companion(vis, name);
    quote! {
        #function

        #shared_attrs
        #companion

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
            fn route() -> ::timebox::__private::server::Route<__TimeboxState> {
                async fn __timebox_handler(#(#params),*) -> ::timebox::__private::server::Response {
                    use ::timebox::__private::server::{DeadlineAwareKind as _, PlainKind as _};
                    // Taken as a value, as in axum's `get(handler)`, so
                    // clippy's `unused_async` treats it as a handler.
                    let handler = #name;
                    let #future = handler(#(#arg_names),*);
                    let #output = #must_be_send.await;
                    #respond
                }
                #register
            }
        }
    }
}

fn timeout(timeout: &Timeout) -> TokenStream {
    match timeout {
        Timeout::Inherit => quote!(::timebox::__private::server::RouteTimeout::Inherit),
        Timeout::Millis(millis) => quote! {
            ::timebox::__private::server::RouteTimeout::Override(
                ::core::time::Duration::from_millis(#millis)
            )
        },
        Timeout::Off => quote!(::timebox::__private::server::RouteTimeout::Off),
    }
}

/// The companion of a handler whose attribute did not validate: it lets
/// `routes![..]` type-check, so the attribute's own error is the only one.
/// It is never run: the `compile_error!` beside it fails the build.
pub(super) fn fallback(function: &syn::ItemFn) -> TokenStream {
    let name = &function.sig.ident;
    let companion = companion(&function.vis, name);
    quote! {
        #companion

        impl<__TimeboxState> ::timebox::__private::server::RouteDef<__TimeboxState, ()> for #name
        where
            __TimeboxState: ::core::clone::Clone
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static,
        {
            fn route() -> ::timebox::__private::server::Route<__TimeboxState> {
                ::core::panic!("the route attribute of this handler did not compile")
            }
        }
    }
}

/// The hidden companion struct: a braced struct lives only in the type
/// namespace, so it sits beside the handler fn of the same name. It is
/// located at the handler's name, so that a clash with another item of the
/// type namespace (a module named like the handler) points there; it stays
/// the macro's code, which lints leave alone.
fn companion(vis: &syn::Visibility, name: &syn::Ident) -> TokenStream {
    let span = Span::call_site().located_at(name.span());
    quote_spanned! {span=>
        #[doc(hidden)]
        #[allow(
            dead_code,
            non_camel_case_types,
            missing_docs,
            missing_debug_implementations,
            unreachable_pub
        )]
        #vis struct #name {}
    }
}
