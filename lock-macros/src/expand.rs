//! Code generation: the annotated fn's body becomes a closure handed to
//! `lock_core::macro_support::run_locked`, after the key is rendered from the arguments.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{ItemFn, LitStr, ReturnType, Type};

use crate::args::{Args, Errors, Key, OnBusy, OnLost};
use crate::duration::{self, Wait};
use crate::{bindings, template};

/// The fn with its body wrapped in the lock, or every error found (the caller re-emits the
/// fn unchanged beside them).
pub(crate) fn expand(
    args: Args,
    func: &ItemFn,
    mut errors: Errors,
) -> Result<TokenStream, syn::Error> {
    check_contract(func, &mut errors);
    let key = render_key(&args, func, &mut errors);
    if let Some(errors) = errors.0 {
        return Err(errors);
    }
    let Some(key) = key else {
        // `args` reports a missing key, so this is unreachable; emit the fn unchanged anyway.
        return Ok(func.to_token_stream());
    };

    let krate = args
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::lock_core));
    let support = quote!(#krate::macro_support);
    let ReturnType::Type(_, return_type) = &func.sig.output else {
        // `check_contract` refuses fns without a return type; emit the fn unchanged anyway.
        return Ok(func.to_token_stream());
    };

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
    let busy = match args.on_busy {
        Some((OnBusy::Skip, _)) => quote!(#support::busy_skip),
        _ => quote!(#support::busy_error),
    };

    let key_var = Ident::new("__lock_key", Span::mixed_site());
    let fence_var = Ident::new("__lock_fence", Span::mixed_site());
    let fence = args
        .fence
        .as_ref()
        .map(|fence| quote!(let #fence: u64 = #fence_var;));
    let hint = return_hint(return_type);
    // Unmet bounds (`E: From<LockError>`, `T: Default` for skip) are reported once, on the
    // attribute, naming the type: spans mixed from several places would report them twice.
    let run_locked = quote!(#support::run_locked);
    let block = &func.block;
    // A body's inner attributes (`#![allow(...)]`) stay at the top of the fn's body.
    let (inner, outer): (Vec<_>, Vec<_>) = func
        .attrs
        .iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Inner(_)));
    let body = quote! {
        {
            #(#inner)*
            let #key_var: ::std::string::String = #key;
            #run_locked(
                #client,
                #key_var,
                #support::Options {
                    lease: #lease,
                    wait: #wait,
                    cancel_on_lost: #cancel_on_lost,
                },
                move |#fence_var: u64| async move {
                    #hint
                    #fence
                    #block
                },
                #busy,
            )
            .await
        }
    };

    let ItemFn { vis, sig, .. } = func;
    Ok(quote! {
        #(#outer)*
        #vis #sig #body
    })
}

/// `async fn` returning a `Result`: refuses anything else, with the reason.
fn check_contract(func: &ItemFn, errors: &mut Errors) {
    let sig = &func.sig;
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token.span,
            "`#[distributed_lock]` applies to `async fn` only: the lock is held across the \
             body's `.await`s and released when it completes",
        );
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
        errors.at(
            span,
            "`#[distributed_lock]` needs the fn to return `Result<T, E>` with \
             `E: From<lock_core::LockError>`: a busy lock, a lost lease or an unreachable \
             backend is returned as that error",
        );
    }
}

/// The expression building the lock key: `"{name}:{rendered}"`. Template errors go to
/// `errors`.
fn render_key(args: &Args, func: &ItemFn, errors: &mut Errors) -> Option<TokenStream> {
    let prefix = match &args.name {
        Some(name) => {
            let escaped = name.value().replace('{', "{{").replace('}', "}}");
            LitStr::new(&escaped, name.span()).into_token_stream()
        }
        None => {
            let fn_name = func.sig.ident.to_string();
            quote!(::core::module_path!(), "::", #fn_name)
        }
    };
    match args.key.as_ref()? {
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
            let format = template.format.as_str();
            let values = template.placeholders.iter().map(|p| p.to_expr(lit.span()));
            Some(quote_spanned! {lit.span()=>
                ::std::format!(::core::concat!(#prefix, ":", #format), #(#values),*)
            })
        }
        Key::Expr(expr) => Some(quote_spanned! {expr.span()=>
            ::std::format!(::core::concat!(#prefix, ":{}"), #expr)
        }),
    }
}

/// An unreachable `return` of the declared type, so `?` in the body knows what to convert
/// into (the async block's output is otherwise inferred). Left out when the type contains
/// `impl Trait`, which a `let` cannot name.
fn return_hint(return_type: &Type) -> Option<TokenStream> {
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
struct ImplTraitFinder(bool);

impl<'ast> Visit<'ast> for ImplTraitFinder {
    fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
        self.0 = true;
    }
}
