//! `#[single_flight]`'s arguments: `key = ..., name = ..., ttl = ..., stale = ...,
//! stale_if_error = ..., negative_ttl = ..., wait = ..., cache = ..., crate = ...`. `key`,
//! `name` and `crate` are parsed as `#[distributed_lock]` parses them; durations are checked
//! against the cache's bounds here, at compile time.

use std::time::Duration;

use proc_macro2::Span;
use syn::{Expr, Ident, LitStr, Path};

use crate::args::{self, expect_string, Errors, Key};
use crate::duration;

/// The argument names, as listed in errors.
const ARGUMENTS: &str = "`key`, `name`, `ttl`, `stale`, `stale_if_error`, `negative_ttl`, \
                         `wait`, `cache`, `crate`";

/// The parsed arguments; what was not given is `None` (the cache's own setting applies).
#[derive(Default)]
pub(crate) struct Args {
    /// `key = "template"` or `key = <expr>`.
    pub(crate) key: Option<Key>,
    /// `name = "prefix"`.
    pub(crate) name: Option<LitStr>,
    /// `ttl = "60s"`: how long a value is fresh.
    pub(crate) ttl: Option<Duration>,
    /// `stale = "5m"`: stale-while-revalidate.
    pub(crate) stale: Option<Duration>,
    /// `stale_if_error = "1h"`.
    pub(crate) stale_if_error: Option<Duration>,
    /// `negative_ttl = "5s"`: how long a failure is remembered.
    pub(crate) negative_ttl: Option<Duration>,
    /// `wait = "3s"`: how long to wait for another caller's computation.
    pub(crate) wait: Option<Duration>,
    /// `cache = <expr>`.
    pub(crate) cache: Option<Expr>,
    /// `crate = path`.
    pub(crate) krate: Option<Path>,
}

/// Parses the attribute's tokens. Returns what could be parsed, and every error found.
pub(crate) fn parse(tokens: proc_macro2::TokenStream) -> (Args, Option<syn::Error>) {
    let mut parsed = Args::default();
    let mut errors = args::parse_pairs(tokens, |key, name, value| {
        apply(key, name, value, &mut parsed)
    });
    if errors.0.is_none() && parsed.key.is_none() {
        missing_key(&mut errors);
    }
    (parsed, errors.0)
}

/// Stores one argument's value, checking it.
fn apply(key: &str, name: &Ident, value: Expr, parsed: &mut Args) -> syn::Result<()> {
    match key {
        "key" => parsed.key = Some(args::key(value)),
        "name" => parsed.name = Some(args::name(&value)?),
        "ttl" => parsed.ttl = Some(window(&value, key, true)?),
        "stale" => parsed.stale = Some(window(&value, key, false)?),
        "stale_if_error" => parsed.stale_if_error = Some(window(&value, key, false)?),
        "negative_ttl" => parsed.negative_ttl = Some(window(&value, key, false)?),
        "wait" => parsed.wait = Some(window(&value, key, true)?),
        "cache" => parsed.cache = Some(value),
        "crate" => parsed.krate = Some(args::krate(value)?),
        other => {
            let hint = match other {
                "on_busy" | "on_lost" | "client" | "fence" => format!(
                    " (`{other}` is an argument of `#[distributed_lock]`, which locks a fn; \
                     `#[single_flight]` caches its result)"
                ),
                _ => String::new(),
            };
            return Err(syn::Error::new(
                name.span(),
                format!("unknown argument `{other}`{hint}; the arguments are {ARGUMENTS}"),
            ));
        }
    }
    Ok(())
}

/// A duration argument: a string such as `"60s"`, within the cache's bounds.
fn window(value: &Expr, key: &str, positive: bool) -> syn::Result<Duration> {
    let lit = expect_string(
        value,
        key,
        "a duration such as \"60s\", \"250ms\" or \"5m\"",
    )?;
    duration::parse_window(lit, key, positive)
}

fn missing_key(errors: &mut Errors) {
    errors.at(
        Span::call_site(),
        "missing `key`: name the cached value, such as \
         `#[single_flight(key = \"product:{id}\")]`",
    );
}
