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
