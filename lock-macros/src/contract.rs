//! What every attribute requires of the fn it wraps (`async`, returning a `Result`), what
//! each builds from its arguments before the body (the crate's paths, the key), the hint that
//! lets the body's `?` see the fn's error type once the body is inside a closure, and the fn
//! re-emitted around its new body.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{ItemFn, LitStr, Path, ReturnType, Stmt, Type};

use crate::args::{Errors, Key};
use crate::key;

/// What an attribute builds from its arguments before the body.
pub(crate) struct Prepared<'f> {
    /// The crate the generated code names (`crate = ...`, or `::lock_core`).
    pub(crate) krate: Path,
    /// Its `macro_support` module.
    pub(crate) support: TokenStream,
    /// The key, an expression of the fn's arguments.
    pub(crate) key: TokenStream,
    /// The fn's return type.
    pub(crate) return_type: &'f Type,
}

/// The crate's paths and the key of `func` (from `key` and `name`): `Err` with every error
/// found (`errors` and the key's), `Ok(None)` when there is nothing to wrap (a missing key or
/// no return type, which the arguments' and the contract's checks refuse; the caller emits the
/// fn unchanged anyway).
pub(crate) fn prepare<'f>(
    krate: &Option<Path>,
    key: &Option<Key>,
    name: &Option<LitStr>,
    func: &'f ItemFn,
    mut errors: Errors,
) -> Result<Option<Prepared<'f>>, syn::Error> {
    let krate = krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::lock_core));
    let support = quote!(#krate::macro_support);
    let key = key
        .as_ref()
        .and_then(|key| key::expr(key, name.as_ref(), func, &support, &mut errors));
    if let Some(errors) = errors.0 {
        return Err(errors);
    }
    let (Some(key), ReturnType::Type(_, return_type)) = (key, &func.sig.output) else {
        return Ok(None);
    };
    Ok(Some(Prepared {
        krate,
        support,
        key,
        return_type,
    }))
}

/// `func` with the body that `body` makes of the fn's inner attributes (`#![allow(...)]`, kept
/// at the top of the new body) and statements; its outer attributes, visibility and signature
/// as they were. The body's statements, not its block: re-emitted as a block in tail position,
/// a one-line body (`{ Ok(id) }`) would trip `unused_braces` on the user's braces.
pub(crate) fn with_body(
    func: &ItemFn,
    body: impl FnOnce(TokenStream, &[Stmt]) -> TokenStream,
) -> TokenStream {
    let (inner, outer): (Vec<_>, Vec<_>) = func
        .attrs
        .iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Inner(_)));
    let body = body(quote!(#(#inner)*), &func.block.stmts);
    let ItemFn { vis, sig, .. } = func;
    quote! {
        #(#outer)*
        #vis #sig #body
    }
}

/// Refuses a fn that is not `async` or does not return a `Result`, with `not_async` and
/// `not_result` as the reasons.
pub(crate) fn check(func: &ItemFn, not_async: &str, not_result: &str, errors: &mut Errors) {
    let sig = &func.sig;
    if sig.asyncness.is_none() {
        errors.at(sig.fn_token.span, not_async);
    }
    let result_like = match &sig.output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|last| last.ident.to_string().ends_with("Result")),
            _ => false,
        },
        ReturnType::Default => false,
    };
    if !result_like {
        let span = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.paren_token.span.join(),
        };
        errors.at(span, not_result);
    }
}

/// An unreachable `return` of the declared type, so `?` in the body knows what to convert
/// into (the async block's output is otherwise inferred). Left out when the type contains
/// `impl Trait`, which a `let` cannot name.
pub(crate) fn return_hint(return_type: &Type) -> Option<TokenStream> {
    let mut finder = ImplTraitFinder(false);
    finder.visit_type(return_type);
    if finder.0 {
        return None;
    }
    let var = format_ident!("__lock_return", span = Span::mixed_site());
    Some(quote_spanned! {return_type.span()=>
        #[allow(
            unknown_lints,
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::needless_return,
            clippy::unreachable
        )]
        if false {
            let #var: #return_type = loop {};
            return #var;
        }
    })
}

/// Finds `impl Trait` anywhere in a type.
pub(crate) struct ImplTraitFinder(pub(crate) bool);

impl<'ast> Visit<'ast> for ImplTraitFinder {
    fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
        self.0 = true;
    }
}

/// The function that turns the macro's failure into the fn's error:
/// `<<R as FnResult>::Error as Trait>::method`, spanned on the fn's error type (or its return
/// type), so an error type that cannot hold the failure is reported there, once, by the
/// trait's own message. With `impl Trait` in the return type, which an expression cannot
/// name, the generic `fallback` of `macro_support` instead.
pub(crate) fn failure_fn(
    return_type: &Type,
    support: &TokenStream,
    trait_path: &TokenStream,
    method: &str,
    fallback: &str,
) -> TokenStream {
    let mut finder = ImplTraitFinder(false);
    finder.visit_type(return_type);
    if finder.0 {
        let fallback = format_ident!("{}", fallback);
        return quote::quote!(#support::#fallback);
    }
    let method = format_ident!("{}", method);
    quote_spanned! {error_span(return_type)=>
        <<#return_type as #support::FnResult>::Error as #trait_path>::#method
    }
}

/// Where the fn's error type is written: `E` of a written-out `Result<T, E>`, else the whole
/// return type (`io::Result<T>`, an alias).
fn error_span(return_type: &Type) -> Span {
    if let Type::Path(path) = return_type {
        if let Some(last) = path.path.segments.last() {
            if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                if let Some(syn::GenericArgument::Type(error)) = args.args.iter().nth(1) {
                    return error.span();
                }
            }
        }
    }
    return_type.span()
}
