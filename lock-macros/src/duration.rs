//! Durations written as strings (`"30s"`, `"250ms"`, `"1m 30s"`), checked at compile time.

use std::time::Duration;

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

/// lock-core's `MIN_LEASE_TTL`: a proc macro cannot depend on the crate that re-exports it.
const MIN_LEASE_TTL: Duration = Duration::from_millis(30);
/// lock-core's `MAX_LEASE_TTL`.
const MAX_LEASE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// lock-core's `cache::MAX_WINDOW`: the longest cache window or wait.
const MAX_WINDOW: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// How long to wait for a busy lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Until granted.
    Forever,
    /// Up to this long; zero tries once.
    Up(Duration),
}

/// Parses `lit` as a humantime duration (`"3s"`, `"1m 30s"`); `what` names the argument in
/// the error.
pub(crate) fn parse(lit: &LitStr, what: &str) -> syn::Result<Duration> {
    let text = lit.value();
    humantime::parse_duration(text.trim()).map_err(|error| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid duration {text:?} for `{what}`: {error}; \
                 write a number with a unit, such as \"250ms\", \"30s\" or \"1m 30s\""
            ),
        )
    })
}

/// Parses `ttl = "..."`: a duration within the lease bounds lock-core accepts.
pub(crate) fn parse_ttl(lit: &LitStr) -> syn::Result<Duration> {
    let ttl = parse(lit, "ttl")?;
    if ttl < MIN_LEASE_TTL || ttl > MAX_LEASE_TTL {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "`ttl` of {} is outside the lease bounds {}..={}",
                humantime::format_duration(ttl),
                humantime::format_duration(MIN_LEASE_TTL),
                humantime::format_duration(MAX_LEASE_TTL),
            ),
        ));
    }
    Ok(ttl)
}

/// Parses `wait = "..."`: `"forever"` or a duration (`"0s"` tries once).
pub(crate) fn parse_wait(lit: &LitStr) -> syn::Result<Wait> {
    if lit.value().trim() == "forever" {
        return Ok(Wait::Forever);
    }
    parse(lit, "wait").map(Wait::Up)
}

/// Parses a cache window or wait (`ttl`, `stale`, `wait`, ... of `#[single_flight]`): at most
/// a year, as lock-core's cache accepts; `positive` refuses zero, for those where it means
/// nothing (a value fresh for no time, a wait of none).
pub(crate) fn parse_window(lit: &LitStr, what: &str, positive: bool) -> syn::Result<Duration> {
    let window = parse(lit, what)?;
    if positive && window.is_zero() {
        return Err(syn::Error::new(
            lit.span(),
            format!("`{what}` must be longer than zero"),
        ));
    }
    if window > MAX_WINDOW {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "`{what}` of {} is longer than the cache's limit of {}",
                humantime::format_duration(window),
                humantime::format_duration(MAX_WINDOW),
            ),
        ));
    }
    Ok(window)
}

/// A `core::time::Duration` constant expression.
pub(crate) fn to_tokens(duration: Duration) -> TokenStream {
    let secs = duration.as_secs();
    let nanos = duration.subsec_nanos();
    quote!(::core::time::Duration::new(#secs, #nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str) -> LitStr {
        LitStr::new(text, proc_macro2::Span::call_site())
    }

    #[test]
    fn parses_humantime() {
        assert_eq!(
            parse(&lit("1m 30s"), "wait").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(parse_wait(&lit("forever")).unwrap(), Wait::Forever);
        assert_eq!(parse_wait(&lit("0s")).unwrap(), Wait::Up(Duration::ZERO));
    }

    #[test]
    fn refuses_bad_text_and_out_of_bounds_ttls() {
        assert!(parse(&lit("3 parsecs"), "wait").is_err());
        assert!(parse_ttl(&lit("10ms")).is_err());
        assert!(parse_ttl(&lit("2days")).is_err());
        assert!(parse_ttl(&lit("30s")).is_ok());
    }

    #[test]
    fn cache_windows_are_bounded_and_may_have_to_be_positive() {
        assert_eq!(
            parse_window(&lit("5m"), "stale", false).unwrap(),
            Duration::from_secs(300)
        );
        assert!(parse_window(&lit("0s"), "stale", false).is_ok());
        assert!(parse_window(&lit("0s"), "ttl", true).is_err());
        assert!(parse_window(&lit("400days"), "ttl", true).is_err());
    }
}
