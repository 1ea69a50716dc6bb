//! `#[run_once]`'s arguments: `key = ..., name = ..., at_most = ..., at_least = ...,
//! client = ..., fence = ..., crate = ...`, turned into `#[distributed_lock]`'s (a fixed lease
//! of `at_most`, tried once, skipped when busy, let finish when lost) plus the hold at least,
//! so the key, client and fence are handled exactly as there.

use proc_macro2::Span;
use syn::{Expr, Ident};

use crate::args::{self, expect_string, Args, Errors, OnBusy, OnLost};
use crate::duration;

/// The argument names, as listed in errors.
const ARGUMENTS: &str = "`key`, `name`, `at_most`, `at_least`, `client`, `fence`, `crate`";

/// Parses the attribute's tokens. Returns what could be parsed, and every error found.
pub(crate) fn parse(tokens: proc_macro2::TokenStream) -> (Args, Option<syn::Error>) {
    let mut parsed = Args {
        attribute: Some("run_once"),
        on_busy: Some((OnBusy::Skip, Span::call_site())),
        on_lost: Some(OnLost::Continue),
        ..Args::default()
    };
    let mut at_least_span = Span::call_site();
    let mut errors = args::parse_pairs(tokens, |key, name, value| {
        apply(key, name, value, &mut parsed, &mut at_least_span)
    });
    if errors.0.is_none() {
        check(&parsed, at_least_span, &mut errors);
    }
    (parsed, errors.0)
}

/// Stores one argument's value, checking it.
fn apply(
    key: &str,
    name: &Ident,
    value: Expr,
    parsed: &mut Args,
    at_least_span: &mut Span,
) -> syn::Result<()> {
    match key {
        "key" => parsed.key = Some(args::key(value)),
        "name" => parsed.name = Some(args::name(&value)?),
        "at_most" => {
            let lit = expect_string(&value, "at_most", "a duration such as \"10m\"")?;
            parsed.ttl = Some(duration::parse_ttl(lit).map_err(|_| {
                syn::Error::new(
                    lit.span(),
                    "`at_most` is the job's lease: a duration within the lease bounds \
                     (30ms..=24h), such as \"10m\"",
                )
            })?);
        }
        "at_least" => {
            let lit = expect_string(&value, "at_least", "a duration such as \"30s\"")?;
            parsed.at_least = Some(duration::parse(lit, "at_least")?);
            *at_least_span = lit.span();
        }
        "client" => parsed.client = Some(value),
        "fence" => parsed.fence = Some(args::fence(&value)?),
        "crate" => parsed.krate = Some(args::krate(value)?),
        other => {
            let hint = match other {
                "ttl" => " (a run-once job's lease is `at_most`)",
                "wait" | "on_busy" | "on_lost" => {
                    " (a run-once job never waits: another instance holding the key means \
                     it ran this slot, and the call returns `Ok(Default::default())`)"
                }
                _ => "",
            };
            return Err(syn::Error::new(
                name.span(),
                format!("unknown argument `{other}`{hint}; the arguments are {ARGUMENTS}"),
            ));
        }
    }
    Ok(())
}

/// `key` and `at_most` are required; `at_least` may not exceed `at_most`.
fn check(parsed: &Args, at_least_span: Span, errors: &mut Errors) {
    if parsed.key.is_none() {
        errors.at(
            Span::call_site(),
            "missing `key`: name the job, such as `#[run_once(key = \"nightly-report\", \
             at_most = \"10m\")]`",
        );
    }
    match (parsed.ttl, parsed.at_least) {
        (None, _) => errors.at(
            Span::call_site(),
            "missing `at_most`: how long the job's key stays taken if its instance dies, such \
             as `at_most = \"10m\"`",
        ),
        (Some(at_most), Some(at_least)) if at_least > at_most => errors.at(
            at_least_span,
            format!("`at_least` ({at_least:?}) is longer than `at_most` ({at_most:?})"),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::parse;

    fn error(tokens: proc_macro2::TokenStream) -> String {
        parse(tokens).1.map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn becomes_a_fixed_lease_tried_once_and_skipped_when_busy() {
        let (args, errors) = parse(quote!(key = "job", at_least = "30s", at_most = "10m"));
        assert!(errors.is_none());
        assert_eq!(args.ttl, Some(std::time::Duration::from_secs(600)));
        assert_eq!(args.at_least, Some(std::time::Duration::from_secs(30)));
        assert!(matches!(args.on_busy, Some((super::OnBusy::Skip, _))));
        assert_eq!(args.on_lost, Some(super::OnLost::Continue));
    }

    #[test]
    fn says_what_is_missing_or_wrong() {
        assert!(error(quote!(at_most = "1m")).contains("missing `key`"));
        assert!(error(quote!(key = "job")).contains("missing `at_most`"));
        assert!(error(quote!(key = "job", at_most = "1s", at_least = "2s"))
            .contains("longer than `at_most`"));
        assert!(error(quote!(key = "job", at_most = "48h")).contains("lease bounds"));
        assert!(error(quote!(key = "job", at_most = "1m", ttl = "1s")).contains("`at_most`"));
        assert!(
            error(quote!(key = "job", at_most = "1m", on_busy = "wait")).contains("never waits")
        );
    }
}
