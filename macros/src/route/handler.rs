//! The checks of the function a route attribute is on: an `async fn`
//! handler that axum can call, with one route attribute.

use quote::ToTokens;
use syn::Type;

use super::Method;
use crate::errors::Errors;

/// The most arguments an axum handler takes.
const MAX_EXTRACTORS: usize = 16;

/// Checks the handler `function` under the route attribute `method`: an
/// `async fn`, not `unsafe`, not a method, not generic, with at most
/// [`MAX_EXTRACTORS`] arguments axum can extract, and no second route
/// attribute; every problem at once.
pub(super) fn validate_fn(method: Method, function: &syn::ItemFn) -> syn::Result<()> {
    let name = method.attribute();
    let mut errors = Errors::default();
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!("`#[{name}]` handlers must be async; write `async fn`"),
        ));
    }
    if let Some(unsafety) = sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            format!("`#[{name}]` handlers cannot be `unsafe`; remove it"),
        ));
    }
    if let Some(receiver) = sig.receiver() {
        errors.push(syn::Error::new_spanned(
            receiver,
            format!("`#[{name}]` handlers cannot take `self`; make it a free function"),
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            format!("`#[{name}]` handlers cannot be generic; remove the parameters"),
        ));
    }
    if let Some(past) = sig.inputs.iter().nth(MAX_EXTRACTORS) {
        errors.push(syn::Error::new_spanned(
            past,
            format!(
                "`#[{name}]` handlers take at most {MAX_EXTRACTORS} extractors, as axum's \
                 handlers do; group some into a tuple, `(HeaderMap, Query<Page>)`, which \
                 is one extractor"
            ),
        ));
    }
    for input in &sig.inputs {
        if let syn::FnArg::Typed(input) = input {
            if let Some(impl_trait) = impl_trait(&input.ty) {
                errors.push(syn::Error::new_spanned(
                    impl_trait,
                    format!("`#[{name}]` handlers cannot be generic; name the extractor's type instead of `impl Trait`"),
                ));
            } else if let Some(borrow) = borrowed(&input.ty) {
                let fix = match &borrow {
                    Borrow::Reference(_) => "take it by value: remove the `&`".to_owned(),
                    Borrow::Lifetime(lifetime) => format!(
                        "an extractor owns what it holds: use an owned type instead of one that borrows for `{lifetime}`"
                    ),
                };
                errors.push(syn::Error::new_spanned(
                    borrow,
                    format!("`#[{name}]` handler arguments are extractors; {fix}"),
                ));
            }
        }
    }
    // Every argument but the last runs on the request's head: one that
    // reads the body there is a mistake axum can only report at `routes!`,
    // as an extractor that is not one.
    let typed: Vec<&Type> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(input) => Some(&*input.ty),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    if let Some((_, init)) = typed.split_last() {
        for ty in init {
            if let Some(body) = body_extractor(ty) {
                errors.push(syn::Error::new_spanned(
                    ty,
                    format!(
                        "`{body}` reads the request body, so it must be the handler's last \
                         argument: axum runs every other extractor on the request's head first"
                    ),
                ));
            }
        }
    }
    for attr in &function.attrs {
        if let Some(other) = route_attribute(attr) {
            errors.push(syn::Error::new_spanned(
                attr,
                format!("a handler takes one route attribute; move `#[{}]` to a second handler that calls this one", other.attribute()),
            ));
        }
    }
    errors.finish()
}

/// An `impl Trait` anywhere in an argument's type, which makes it generic.
fn impl_trait(ty: &Type) -> Option<&Type> {
    match ty {
        Type::ImplTrait(_) => Some(ty),
        Type::Array(array) => impl_trait(&array.elem),
        Type::Group(group) => impl_trait(&group.elem),
        Type::Paren(paren) => impl_trait(&paren.elem),
        Type::Ptr(ptr) => impl_trait(&ptr.elem),
        Type::Reference(reference) => impl_trait(&reference.elem),
        Type::Slice(slice) => impl_trait(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(impl_trait),
        Type::Path(path) => type_arguments(path).find_map(|argument| match argument {
            syn::GenericArgument::Type(ty) => impl_trait(ty),
            _ => None,
        }),
        _ => None,
    }
}

/// The extractors that read a request's body, by their name: axum's, and
/// the types axum extracts so (`String`, `Bytes`, its `Body`, `Request`).
const BODY_EXTRACTORS: [&str; 8] = [
    "Json",
    "Form",
    "String",
    "Bytes",
    "Body",
    "Request",
    "Multipart",
    "RawForm",
];

/// The body extractors axum extracts as an `Option` too.
const OPTIONAL_BODY_EXTRACTORS: [&str; 2] = ["Json", "Multipart"];

/// The name of the body extractor `ty` is, if it is one of
/// [`BODY_EXTRACTORS`]: also the one a `Result` extracts (its first
/// argument: the second is a rejection, whatever its type), and the one an
/// `Option` does when axum extracts it so ([`OPTIONAL_BODY_EXTRACTORS`];
/// moved last, another would still be no extractor).
fn body_extractor(ty: &Type) -> Option<&syn::Ident> {
    let Type::Path(path) = ungroup(ty) else {
        return None;
    };
    let last = path.path.segments.last()?;
    let held = || match type_arguments(path).next() {
        Some(syn::GenericArgument::Type(ty)) => body_extractor(ty),
        _ => None,
    };
    if last.ident == "Result" {
        return held();
    }
    if last.ident == "Option" {
        return held().filter(|name| {
            OPTIONAL_BODY_EXTRACTORS
                .iter()
                .any(|&optional| *name == optional)
        });
    }
    BODY_EXTRACTORS
        .iter()
        .any(|name| last.ident == name)
        .then_some(&last.ident)
}

/// `ty` without the parentheses and invisible groups around it.
fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(group) => ungroup(&group.elem),
        Type::Paren(paren) => ungroup(&paren.elem),
        other => other,
    }
}

/// A borrow in an argument's type, which no extractor can be.
enum Borrow<'a> {
    /// `&T`, `&'a T`.
    Reference(&'a syn::TypeReference),
    /// A lifetime argument other than `'static` (`Cow<'_, str>`).
    Lifetime(&'a syn::Lifetime),
}

impl ToTokens for Borrow<'_> {
    fn to_tokens(&self, tokens: &mut proc_macro2::TokenStream) {
        match self {
            Borrow::Reference(reference) => reference.to_tokens(tokens),
            Borrow::Lifetime(lifetime) => lifetime.to_tokens(tokens),
        }
    }
}

/// A borrow anywhere in an argument's type (a reference, or a lifetime
/// other than `'static`): an extractor owns what it holds, and the
/// companion's bounds could not name the lifetime.
fn borrowed(ty: &Type) -> Option<Borrow<'_>> {
    match ty {
        Type::Reference(reference) => match &reference.lifetime {
            Some(lifetime) if lifetime.ident == "static" => borrowed(&reference.elem),
            _ => Some(Borrow::Reference(reference)),
        },
        Type::Array(array) => borrowed(&array.elem),
        Type::Group(group) => borrowed(&group.elem),
        Type::Paren(paren) => borrowed(&paren.elem),
        Type::Slice(slice) => borrowed(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(borrowed),
        Type::Path(path) => type_arguments(path).find_map(|argument| match argument {
            syn::GenericArgument::Type(ty) => borrowed(ty),
            syn::GenericArgument::Lifetime(lifetime) if lifetime.ident != "static" => {
                Some(Borrow::Lifetime(lifetime))
            }
            _ => None,
        }),
        _ => None,
    }
}

/// The generic arguments of every segment of `path` (`Option<T>`'s `T`).
fn type_arguments(path: &syn::TypePath) -> impl Iterator<Item = &syn::GenericArgument> {
    path.path
        .segments
        .iter()
        .filter_map(|segment| match &segment.arguments {
            syn::PathArguments::AngleBracketed(arguments) => Some(arguments),
            _ => None,
        })
        .flat_map(|arguments| &arguments.args)
}

/// Whether the handler carries another route attribute, which defines its
/// companion when it expands.
pub(super) fn has_route_attribute(function: &syn::ItemFn) -> bool {
    function
        .attrs
        .iter()
        .any(|attr| route_attribute(attr).is_some())
}

/// The method of another route attribute on the same handler, which would
/// define a second companion with the same name: `get` or `timebox::get`.
fn route_attribute(attr: &syn::Attribute) -> Option<Method> {
    let path = attr.path();
    let last = path.segments.last()?;
    let qualified = match path.segments.len() {
        1 => true,
        2 => path.segments[0].ident == "timebox",
        _ => false,
    };
    if !qualified {
        return None;
    }
    Method::ALL
        .into_iter()
        .find(|method| last.ident == method.attribute())
}
