//! The key expression: `"{name}:{rendered template}"`, built from the fn's arguments. Every
//! attribute that keys by template (`#[distributed_lock]`, `#[single_flight]`) builds it here,
//! so they all build the same key from the same template.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr};

use crate::args::{Errors, Key};
use crate::{bindings, template};

/// The expression building the key of `func` (a `String`): `name` (default: the fn's
/// `module::path::fn_name`), `:`, then the template with each value percent-encoded by
/// `support::template_key`, or the `Display` text of a key expression as is. Template errors
/// go to `errors`, spanned on the template; then the result is `None`.
pub(crate) fn expr(
    key: &Key,
    name: Option<&LitStr>,
    func: &ItemFn,
    support: &TokenStream,
    errors: &mut Errors,
) -> Option<TokenStream> {
    let fn_name = func.sig.ident.to_string();
    let default_prefix = quote!(::core::module_path!(), "::", #fn_name);
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
            // The prefix is literal text before the first placeholder: it changes nothing about
            // the encoding, so the key is what the template `"{name}:{template}"` renders.
            let prefix = name.map_or(default_prefix, ToTokens::to_token_stream);
            let (first, rest) = template.literals.split_first()?;
            let values = template.placeholders.iter().map(|p| p.to_expr(lit.span()));
            Some(quote_spanned! {lit.span()=>
                #support::template_key(
                    &[::core::concat!(#prefix, ":", #first), #(#rest),*],
                    &[#(::core::format_args!("{}", #values)),*],
                )
            })
        }
        Key::Expr(expr) => {
            // A `format!` string: braces in the name are doubled.
            let prefix = name.map_or(default_prefix, |name| {
                let escaped = name.value().replace('{', "{{").replace('}', "}}");
                LitStr::new(&escaped, name.span()).into_token_stream()
            });
            Some(quote_spanned! {expr.span()=>
                ::std::format!(::core::concat!(#prefix, ":{}"), #expr)
            })
        }
    }
}
