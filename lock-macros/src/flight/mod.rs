//! `#[single_flight]`: the annotated fn's body becomes the computation handed to
//! `lock_core::macro_support::single_flight`, keyed as `#[distributed_lock]` keys its lock
//! ([`key`](crate::key)), owning what it uses ([`owned`]).

mod args;
mod owned;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

pub(crate) use self::args::parse;
use self::args::Args;
use crate::args::Errors;
use crate::contract::{self, failure_fn, prepare, return_hint};
use crate::duration;

/// The fn with its body cached, or every error found (the caller re-emits the fn unchanged
/// beside them).
pub(crate) fn expand(
    args: Args,
    func: &ItemFn,
    mut errors: Errors,
) -> Result<TokenStream, syn::Error> {
    contract::check(
        func,
        "`#[single_flight]` applies to `async fn` only: a caller may wait for the value \
         another caller is computing",
        "`#[single_flight]` needs the fn to return `Result<T, E>`, with `T` serde \
         serialisable (the value is stored as JSON) and `E: From<lock_core::cache::CacheFailure>` \
         (an unreachable backend or another caller's failure is returned as that error)",
        &mut errors,
    );
    let lent = owned::lent(&func.sig, &func.block, &mut errors);
    let Some(p) = prepare(&args.krate, &args.key, &args.name, func, errors)? else {
        // Refused above (missing key, no return type); emit the fn unchanged anyway.
        return Ok(func.to_token_stream());
    };
    let (krate, support, key, return_type) = (p.krate, p.support, p.key, p.return_type);

    let cache = match &args.cache {
        Some(cache) => quote_spanned! {cache.span()=>
            {
                use #support::CacheSource as _;
                (#cache).__single_flight_cache()
            }
        },
        None => quote!(#krate::cache::Cache::global().cloned()),
    };
    let option = |window: Option<std::time::Duration>| match window {
        Some(window) => {
            let window = duration::to_tokens(window);
            quote!(::core::option::Option::Some(#window))
        }
        None => quote!(::core::option::Option::None),
    };
    let (fresh, stale, stale_if_error, negative, wait) = (
        option(args.ttl),
        option(args.stale),
        option(args.stale_if_error),
        option(args.negative_ttl),
        option(args.wait),
    );

    let key_var = format_ident!("__flight_key", span = Span::mixed_site());
    let cache_var = format_ident!("__flight_cache", span = Span::mixed_site());
    let owned_vars: Vec<_> = (0..lent.len())
        .map(|i| format_ident!("__flight_owned_{}", i, span = Span::mixed_site()))
        .collect();
    // Copied before the call, lent to the body inside the computation under their own names.
    let copies = lent.iter().zip(&owned_vars).map(|(lent, owned)| {
        let (ident, target) = (&lent.ident, &lent.target);
        quote_spanned! {lent.span=>
            let #owned = <#target as ::std::borrow::ToOwned>::to_owned(#ident);
        }
    });
    let lends = lent.iter().zip(&owned_vars).map(|(lent, owned)| {
        let (ident, mutability, target) = (&lent.ident, &lent.mutability, &lent.target);
        quote! {
            #[allow(unused_variables)]
            let #mutability #ident: &#target = ::core::borrow::Borrow::borrow(&#owned);
        }
    });
    let hint = return_hint(return_type);
    // An error type without `From<CacheFailure>` is reported once, on the fn's error type, by
    // `FlightFnError`'s message.
    let fail = failure_fn(
        return_type,
        &support,
        &quote!(#krate::cache::FlightFnError),
        "from_cache_failure",
        "cache_failure",
    );
    // Other unmet bounds (`T: Serialize`, `Send + 'static`) are reported on the attribute,
    // naming the type.
    let single_flight = quote!(#support::single_flight);
    Ok(contract::with_body(func, |inner, body_stmts| {
        quote! {
            {
                #inner
                let #key_var: ::std::string::String = #key;
                let #cache_var = #cache;
                #(#copies)*
                #single_flight(
                    #cache_var,
                    #key_var,
                    #support::FlightOptions {
                        fresh: #fresh,
                        stale_while_revalidate: #stale,
                        stale_if_error: #stale_if_error,
                        negative: #negative,
                        wait: #wait,
                    },
                    #fail,
                    move || async move {
                        #(#lends)*
                        #hint
                        #(#body_stmts)*
                    },
                )
                .await
            }
        }
    }))
}
