//! The key expression: the rendered template, after `"{name}:"` when the attribute gives a
//! `name`, built from the fn's arguments. Every attribute that keys by template
//! (`#[distributed_lock]`, `#[single_flight]`) builds it here, so they all build the same key
//! from the same template. Nothing else goes into it (not the fn's name nor its module path),
//! so renaming or moving the fn keeps its key, and other code can build it from the attribute.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr};

use crate::args::{Errors, Key};
use crate::{bindings, template};

/// The expression building the key of `func` (a `String`): `name` and `:` when given, then the
/// template with each value percent-encoded by `support::template_key`, or the `Display` text
/// of a key expression as is. Template errors go to `errors`, spanned on the template; then the
/// result is `None`.
pub(crate) fn expr(
    key: &Key,
    name: Option<&LitStr>,
    func: &ItemFn,
    support: &TokenStream,
    errors: &mut Errors,
) -> Option<TokenStream> {
    match key {
        Key::Template(lit) => {
            let template = match template::parse(&lit.value()) {
                Ok(template) => template,
                Err(message) => {
                    errors.at(lit.span(), message);
                    return None;
                }
            };
            let bindings = bindings::of(&func.sig);
            let unknown = template.unknown_placeholders(&bindings);
            for message in &unknown {
                errors.at(lit.span(), message);
            }
            if !unknown.is_empty() {
                return None;
            }
            // The name is literal text before the first placeholder: it changes nothing about
            // the encoding, so the key is what the template `"{name}:{template}"` renders (or
            // the template alone, without a name).
            let (first, rest) = template.literals.split_first()?;
            let first = match name {
                Some(name) => quote!(::core::concat!(#name, ":", #first)),
                None => first.to_token_stream(),
            };
            let values = template.placeholders.iter().map(|p| p.to_expr(lit.span()));
            Some(quote_spanned! {lit.span()=>
                #support::template_key(
                    &[#first, #(#rest),*],
                    &[#(::core::format_args!("{}", #values)),*],
                )
            })
        }
        Key::Expr(expr) => {
            let Some(name) = name else {
                return Some(quote_spanned! {expr.span()=>
                    ::std::string::ToString::to_string(&(#expr))
                });
            };
            // A `format!` string: braces in the name are doubled.
            let escaped = name.value().replace('{', "{{").replace('}', "}}");
            let prefix = LitStr::new(&format!("{escaped}:{{}}"), name.span());
            Some(quote_spanned! {expr.span()=>
                ::std::format!(#prefix, #expr)
            })
        }
    }
}
