//! `#[distributed_lock]`'s arguments: `key = ..., name = ..., ttl = ..., wait = ...,
//! on_busy = ..., on_lost = ..., client = ..., fence = ..., crate = ...`, and the parsing every
//! attribute shares (`name = value` pairs; `key`, `name` and `crate`).
//!
//! Parsing goes on past a bad argument, so each one gets its own spanned error; only broken
//! syntax (a missing `=` or `,`) stops it.

use std::time::Duration;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path, Token};

use crate::duration::{self, Wait};

/// The argument names, as listed in errors.
const ARGUMENTS: &str =
    "`key`, `name`, `ttl`, `wait`, `on_busy`, `on_lost`, `client`, `fence`, `crate`";

/// The parsed arguments; what was not given is `None`.
#[derive(Default)]
pub(crate) struct Args {
    /// `key = "template"` or `key = <expr>`.
    pub(crate) key: Option<Key>,
    /// `name = "prefix"`.
    pub(crate) name: Option<LitStr>,
    /// `ttl = "30s"`: a fixed lease.
    pub(crate) ttl: Option<Duration>,
    /// `wait = "3s" | "forever" | "0s"`, with the span of its value.
    pub(crate) wait: Option<(Wait, Span)>,
    /// `on_busy = "wait" | "reject" | "skip"`, with the span of its value.
    pub(crate) on_busy: Option<(OnBusy, Span)>,
    /// `on_lost = "cancel" | "continue"`.
    pub(crate) on_lost: Option<OnLost>,
    /// `client = <expr>`.
    pub(crate) client: Option<Expr>,
    /// `fence = ident`.
    pub(crate) fence: Option<Ident>,
    /// `crate = path`.
    pub(crate) krate: Option<Path>,
    /// `#[run_once(at_least = ...)]`: how long the key stays taken after the grant, at least.
    pub(crate) at_least: Option<Duration>,
    /// The attribute these arguments came from, for messages (`distributed_lock` when `None`).
    pub(crate) attribute: Option<&'static str>,
}

/// How the key is given.
pub(crate) enum Key {
    /// A template, checked against the fn's bindings.
    Template(LitStr),
    /// Any expression implementing `Display`.
    Expr(Box<Expr>),
}

/// What to do when the lock is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnBusy {
    /// Wait up to `wait`, then return the busy error.
    Wait,
    /// Return the busy error at once.
    Reject,
    /// Return `Ok(Default::default())` at once, without running the body.
    Skip,
}

/// What to do when the lease is lost while the body runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnLost {
    /// Drop the body's future and return the lost-lease error.
    Cancel,
    /// Let the body finish; only lock-core's log records the loss.
    Continue,
}

/// Parses the attribute's tokens. Returns what could be parsed, and every error found.
pub(crate) fn parse(tokens: proc_macro2::TokenStream) -> (Args, Option<syn::Error>) {
    let mut args = Args::default();
    let mut errors = parse_pairs(tokens, |key, name, value| {
        apply(key, name, value, &mut args)
    });
    if errors.0.is_none() {
        check_combination(&args, &mut errors);
    }
    (args, errors.0)
}

/// Parses `name = value` pairs separated by commas, handing the first of each name to `apply`
/// (which checks the value, or refuses an unknown name); returns every error found.
pub(crate) fn parse_pairs(
    tokens: proc_macro2::TokenStream,
    mut apply: impl FnMut(&str, &Ident, Expr) -> syn::Result<()>,
) -> Errors {
    let mut errors = Errors::default();
    let parsed =
        (|input: ParseStream<'_>| parse_all(input, &mut apply, &mut errors)).parse2(tokens);
    if let Err(error) = parsed {
        errors.push(error);
    }
    errors
}

/// Errors collected so far, combined into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors(pub(crate) Option<syn::Error>);

impl Errors {
    /// Adds `error`.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Adds an error with `message` at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }
}

/// Parses `name = value` pairs separated by commas.
fn parse_all(
    input: ParseStream<'_>,
    apply: &mut impl FnMut(&str, &Ident, Expr) -> syn::Result<()>,
    errors: &mut Errors,
) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    while !input.is_empty() {
        let name = Ident::parse_any(input)?;
        input.parse::<Token![=]>()?;
        let value: Expr = input.parse()?;
        let key = name.to_string();
        if seen.contains(&key) {
            errors.at(name.span(), format!("`{key}` specified more than once"));
        } else {
            seen.push(key.clone());
            if let Err(error) = apply(&key, &name, value) {
                errors.push(error);
            }
        }
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

/// Stores one argument's value, checking it.
fn apply(key: &str, name: &Ident, value: Expr, args: &mut Args) -> syn::Result<()> {
    match key {
        "key" => args.key = Some(self::key(value)),
        "name" => args.name = Some(self::name(&value)?),
        "ttl" => {
            let lit = expect_string(&value, "ttl", "a duration such as \"30s\"")?;
            args.ttl = Some(duration::parse_ttl(lit)?);
        }
        "wait" => {
            let lit = expect_string(&value, "wait", "\"3s\", \"forever\" or \"0s\"")?;
            args.wait = Some((duration::parse_wait(lit)?, lit.span()));
        }
        "on_busy" => {
            let lit = expect_string(&value, "on_busy", "\"wait\", \"reject\" or \"skip\"")?;
            let on_busy = match lit.value().as_str() {
                "wait" => OnBusy::Wait,
                "reject" => OnBusy::Reject,
                "skip" => OnBusy::Skip,
                other => {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "unknown `on_busy` value {other:?}: expected \"wait\" (wait up to \
                             `wait`, then fail), \"reject\" (fail at once) or \"skip\" (return \
                             `Ok(Default::default())` without running the body)"
                        ),
                    ))
                }
            };
            args.on_busy = Some((on_busy, lit.span()));
        }
        "on_lost" => {
            let lit = expect_string(&value, "on_lost", "\"cancel\" or \"continue\"")?;
            args.on_lost = Some(match lit.value().as_str() {
                "cancel" => OnLost::Cancel,
                "continue" => OnLost::Continue,
                other => {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "unknown `on_lost` value {other:?}: expected \"cancel\" (stop the \
                             body and return the lost-lease error) or \"continue\" (let it \
                             finish)"
                        ),
                    ))
                }
            });
        }
        "client" => args.client = Some(value),
        "fence" => args.fence = Some(fence(&value)?),
        "crate" => args.krate = Some(krate(value)?),
        other => {
            return Err(syn::Error::new(
                name.span(),
                format!("unknown argument `{other}`; the arguments are {ARGUMENTS}"),
            ))
        }
    }
    Ok(())
}

/// `key = "template"` or `key = <expr>`.
pub(crate) fn key(value: Expr) -> Key {
    match string(&value) {
        Some(lit) => Key::Template(lit.clone()),
        None => Key::Expr(Box::new(value)),
    }
}

/// `name = "prefix"`: a string, not empty.
pub(crate) fn name(value: &Expr) -> syn::Result<LitStr> {
    let lit = expect_string(value, "name", "a key prefix such as \"orders\"")?;
    if lit.value().is_empty() {
        return Err(syn::Error::new(lit.span(), "`name` must not be empty"));
    }
    Ok(lit.clone())
}

/// `fence = ident`: the name to bind the fencing token to.
pub(crate) fn fence(value: &Expr) -> syn::Result<Ident> {
    match value {
        Expr::Path(path) if path.qself.is_none() => path.path.get_ident().cloned(),
        _ => None,
    }
    .ok_or_else(|| {
        syn::Error::new(
            value.span(),
            "`fence` takes the name to bind the fencing token to, such as `fence = token`",
        )
    })
}

/// `crate = path` or `crate = "path"`.
pub(crate) fn krate(value: Expr) -> syn::Result<Path> {
    match value {
        Expr::Path(path) if path.qself.is_none() => Ok(path.path),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => lit.parse::<Path>(),
        other => Err(syn::Error::new(
            other.span(),
            "`crate` takes the path lock-core is reachable at, such as \
             `crate = ::my_app::locks`",
        )),
    }
}

/// The string literal `value` is, if it is one.
fn string(value: &Expr) -> Option<&LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        _ => None,
    }
}

/// The string literal `value` must be.
pub(crate) fn expect_string<'a>(
    value: &'a Expr,
    name: &str,
    example: &str,
) -> syn::Result<&'a LitStr> {
    string(value).ok_or_else(|| {
        syn::Error::new(
            value.span(),
            format!("`{name}` takes a string literal: {example}"),
        )
    })
}

/// Checks what only makes sense together: a key is required, and `wait` only applies to
/// `on_busy = "wait"`.
fn check_combination(args: &Args, errors: &mut Errors) {
    if args.key.is_none() {
        errors.at(
            Span::call_site(),
            "missing `key`: name the lock, such as \
             `#[distributed_lock(key = \"order:{order.id}\")]`",
        );
    }
    if let (Some((_, wait_span)), Some((on_busy @ (OnBusy::Reject | OnBusy::Skip), _))) =
        (&args.wait, &args.on_busy)
    {
        let on_busy = if *on_busy == OnBusy::Reject {
            "reject"
        } else {
            "skip"
        };
        errors.at(
            *wait_span,
            format!(
                "`wait` does not apply with `on_busy = \"{on_busy}\"`, which never waits; \
                 use `on_busy = \"wait\"` (the default) to wait"
            ),
        );
    }
}
