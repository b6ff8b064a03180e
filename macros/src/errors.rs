//! What every macro does with its errors: collect the independent ones, and
//! emit them together with the item as it was written.

use proc_macro2::TokenStream;

/// Independent errors, reported together.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn take<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|err| self.push(err)).ok()
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// The errors, and the item as it was written, so one mistake does not
/// cascade into "cannot find function" errors wherever it is used.
pub(crate) fn with_item(err: syn::Error, item: TokenStream) -> TokenStream {
    let mut tokens = err.to_compile_error();
    tokens.extend(item);
    tokens
}

/// Both results, or every error of the two.
pub(crate) fn both<A, B>(a: syn::Result<A>, b: syn::Result<B>) -> syn::Result<(A, B)> {
    match (a, b) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(mut a), Err(b)) => {
            a.combine(b);
            Err(a)
        }
        (Err(err), Ok(_)) | (Ok(_), Err(err)) => Err(err),
    }
}
