//! Every rule across the attribute and the function, checked before expansion.

use super::attr::{self, Attr, Key};
use crate::errors::Errors;

/// A `#[sim_test]` that passed every check.
pub(super) struct SimTest {
    pub(super) seed: Option<u64>,
    pub(super) seeds: Option<u64>,
}

/// Checks the attribute and the function, collecting independent errors.
pub(super) fn validate(attr: syn::Result<Attr>, function: &syn::ItemFn) -> syn::Result<SimTest> {
    let mut errors = Errors::default();
    let test = match attr {
        Ok(attr) => errors.take(validate_attr(&attr)),
        Err(err) => {
            errors.push(err);
            None
        }
    };
    if test.as_ref().is_some_and(|test| test.seeds > Some(1)) {
        errors.take(one_seed_to_panic(function));
    }
    errors.take(validate_fn(function));
    errors.finish()?;
    // No errors means the attribute parsed and validated.
    Ok(test.unwrap_or(SimTest {
        seed: None,
        seeds: None,
    }))
}

fn validate_attr(attr: &Attr) -> syn::Result<SimTest> {
    let mut errors = Errors::default();
    let mut seen: Vec<(Key, proc_macro2::Span)> = Vec::new();
    let mut test = SimTest {
        seed: None,
        seeds: None,
    };
    for entry in &attr.entries {
        let name = entry.key.name();
        if seen.iter().any(|(key, _)| *key == entry.key) {
            errors.push(syn::Error::new(
                entry.key_span,
                format!("duplicate key `{name}`; set it once"),
            ));
            continue;
        }
        seen.push((entry.key, entry.key_span));
        let Some(value) = errors.take(attr::int_value(entry)) else {
            continue;
        };
        match entry.key {
            Key::Seed => test.seed = Some(value),
            Key::Seeds if value == 0 => errors.push(syn::Error::new_spanned(
                &entry.value,
                "`seeds` is how many seeds to run and must be at least 1, like `seeds = 8`",
            )),
            Key::Seeds => test.seeds = Some(value),
        }
    }
    if let [(_, _), (_, second)] = seen[..] {
        errors.push(syn::Error::new(
            second,
            "`seed` and `seeds` cannot both be set; keep one",
        ));
    }
    errors.finish()?;
    Ok(test)
}

/// `#[should_panic]` with more than one seed: the first seed that panics
/// ends the run and passes the test, so the seeds after it never run.
fn one_seed_to_panic(function: &syn::ItemFn) -> syn::Result<()> {
    match function
        .attrs
        .iter()
        .find(|attr| attr.path().is_ident("should_panic"))
    {
        Some(attr) => Err(syn::Error::new_spanned(
            attr,
            "`#[should_panic]` with `seeds` passes once the first seed panics, and the seeds \
             after it never run; give the test one seed (`seed = N`), or assert the failure \
             in its body for every seed",
        )),
        None => Ok(()),
    }
}

fn validate_fn(function: &syn::ItemFn) -> syn::Result<()> {
    let mut errors = Errors::default();
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            "`#[sim_test]` functions must be async; write `async fn`",
        ));
    }
    if let Some(unsafety) = sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "`#[sim_test]` functions cannot be `unsafe`; remove it",
        ));
    }
    if let Some(receiver) = sig.receiver() {
        // The arguments after `self` are not counted: the fix is a free
        // function, which may well keep them as its one argument.
        errors.push(syn::Error::new_spanned(
            receiver,
            "`#[sim_test]` functions cannot take `self`: a test is a free function; \
             move it out of the `impl` and write `async fn name(sim: Sim)`",
        ));
    } else {
        match sig.inputs.len() {
            1 => {}
            0 => errors.push(syn::Error::new(
                sig.paren_token.span.join(),
                "`#[sim_test]` functions take the simulation as their one argument; write `(sim: Sim)`",
            )),
            _ => {
                for extra in sig.inputs.iter().skip(1) {
                    errors.push(syn::Error::new_spanned(
                        extra,
                        "`#[sim_test]` functions take exactly one argument, the `Sim`; remove this one",
                    ));
                }
            }
        }
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "`#[sim_test]` functions cannot be generic; remove the parameters",
        ));
    }
    errors.finish()
}
