//! Code generation: the annotated fn's body becomes a closure handed to
//! `lock_core::macro_support::run_locked`, after the key is built from the arguments
//! ([`key`](crate::key)).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

use crate::args::{Args, Errors, OnBusy, OnLost};
use crate::contract::{self, failure_fn, prepare, return_hint};
use crate::duration::{self, Wait};

/// The fn with its body wrapped in the lock, or every error found (the caller re-emits the
/// fn unchanged beside them).
pub(crate) fn expand(
    args: Args,
    func: &ItemFn,
    mut errors: Errors,
) -> Result<TokenStream, syn::Error> {
    check_contract(
        func,
        args.attribute.unwrap_or("distributed_lock"),
        &mut errors,
    );
    let Some(p) = prepare(&args.krate, &args.key, &args.name, func, errors)? else {
        // `args` reports a missing key and `check_contract` a fn without a return type; emit
        // the fn unchanged anyway.
        return Ok(func.to_token_stream());
    };
    let (krate, support, key, return_type) = (p.krate, p.support, p.key, p.return_type);

    let client = match &args.client {
        Some(client) => quote_spanned! {client.span()=>
            {
                use #support::ClientSource as _;
                (#client).__distributed_lock_client()
            }
        },
        None => quote!(#krate::LockClient::global()),
    };
    let lease = match args.ttl {
        Some(ttl) => {
            let ttl = duration::to_tokens(ttl);
            quote!(::core::option::Option::Some(#krate::LeaseMode::fixed(#ttl)))
        }
        None => quote!(::core::option::Option::None),
    };
    let on_busy = args.on_busy.map_or(OnBusy::Wait, |(on_busy, _)| on_busy);
    let wait = match (on_busy, args.wait.map(|(wait, _)| wait)) {
        (OnBusy::Wait, None | Some(Wait::Forever)) => quote!(#krate::WaitPolicy::Forever),
        (OnBusy::Wait, Some(Wait::Up(wait))) if !wait.is_zero() => {
            let wait = duration::to_tokens(wait);
            quote!(#krate::WaitPolicy::Within(#wait))
        }
        _ => quote!(#krate::WaitPolicy::Try),
    };
    let cancel_on_lost = args.on_lost != Some(OnLost::Continue);
    let hold_at_least = match args.at_least {
        Some(at_least) => {
            let at_least = duration::to_tokens(at_least);
            quote!(::core::option::Option::Some(#at_least))
        }
        None => quote!(::core::option::Option::None),
    };
    let busy = match args.on_busy {
        Some((OnBusy::Skip, _)) => quote!(#support::busy_skip),
        _ => quote!(#support::busy_error),
    };

    let key_var = Ident::new("__lock_key", Span::mixed_site());
    let fence_var = Ident::new("__lock_fence", Span::mixed_site());
    let fence = args
        .fence
        .as_ref()
        .map(|fence| quote!(let #fence: #krate::FencingToken = #fence_var;));
    let hint = return_hint(return_type);
    // An error type without `From<LockError>` is reported once, on the fn's error type, by
    // `LockFnError`'s message.
    let fail = failure_fn(
        return_type,
        &support,
        &quote!(#krate::LockFnError),
        "from_lock_error",
        "lock_failure",
    );
    // Other unmet bounds (`T: Default` for skip) are reported once, on the attribute, naming
    // the type: spans mixed from several places would report them twice.
    let run_locked = quote!(#support::run_locked);
    Ok(contract::with_body(func, |inner, body_stmts| {
        quote! {
            {
                #inner
                let #key_var: ::std::string::String = #key;
                #run_locked(
                    #client,
                    #key_var,
                    #support::Options {
                        lease: #lease,
                        wait: #wait,
                        cancel_on_lost: #cancel_on_lost,
                        hold_at_least: #hold_at_least,
                    },
                    move |#fence_var: #krate::FencingToken| async move {
                        #hint
                        #fence
                        #(#body_stmts)*
                    },
                    #busy,
                    #fail,
                )
                .await
            }
        }
    }))
}

/// `async fn` returning a `Result`: refuses anything else, with the reason.
fn check_contract(func: &ItemFn, attribute: &str, errors: &mut Errors) {
    contract::check(
        func,
        &format!(
            "`#[{attribute}]` applies to `async fn` only: the lock is held across the \
             body's `.await`s and released when it completes"
        ),
        &format!(
            "`#[{attribute}]` needs the fn to return `Result<T, E>` with \
             `E: From<lock_core::LockError>`: a busy lock, a lost lease or an unreachable \
             backend is returned as that error"
        ),
        errors,
    );
}
