//! How a client reads the response cache's RFC 9211 `Cache-Status` in front of the product
//! pages: one short name per way of answering, for the stampede's samples and table.
//!
//! ```
//! use lock_harness::demo::stampede::{outcome_of, CACHE_STATUS_HEADER};
//!
//! // A response's `cache-status` header, as the layer in front of the product route wrote it.
//! let (name, value) = (CACHE_STATUS_HEADER, "lock-core; hit; ttl=12");
//! assert_eq!((name, outcome_of(value)), ("cache-status", "hit"));
//! ```

/// The response header that says how the response cache answered (RFC 9211), as the layer in
/// front of the product route writes it.
pub const CACHE_STATUS_HEADER: &str = "cache-status";

/// A short name for how the response cache answered, from its `Cache-Status` member: `hit`,
/// `stale` (stale-while-revalidate), `computed` (this request's response, stored),
/// `collapsed` (another request's), `stale-if-error`, `negative` (a failure remembered),
/// `refreshed` (the refresh this request started, which it waited for: lock-actix outside an
/// actix-web runtime), `fail-open`,
/// `wait-timed-out`, `pass` (a pass-through key), or `uncacheable`.
///
/// ```
/// use lock_harness::demo::stampede::outcome_of;
///
/// assert_eq!(outcome_of("lock-core; fwd=miss; fwd-status=200; stored"), "computed");
/// assert_eq!(outcome_of("lock-core; hit; ttl=-1; detail=stale-while-revalidate"), "stale");
/// assert_eq!(outcome_of("lock-core; fwd=miss; ttl=0; collapsed"), "collapsed");
/// ```
#[must_use]
pub fn outcome_of(cache_status: &str) -> &'static str {
    // This cache's member is the last one (nearest the client).
    let member = cache_status.rsplit(", ").next().unwrap_or_default();
    let params: Vec<&str> = member.split(';').map(str::trim).collect();
    let has = |param: &str| params.contains(&param);
    let detail = params
        .iter()
        .find_map(|p| p.strip_prefix("detail="))
        .unwrap_or_default();
    match detail {
        "stale-while-revalidate" => "stale",
        "stale-if-error" => "stale-if-error",
        "negative" => "negative",
        "fail-open" => "fail-open",
        "wait-timed-out" => "wait-timed-out",
        "hit-for-pass" => "pass",
        _ if has("hit") => "hit",
        _ if has("collapsed") => "collapsed",
        _ if has("stored") => "computed",
        _ if has("fwd=stale") => "refreshed",
        _ => "uncacheable",
    }
}

#[cfg(test)]
mod tests {
    use super::outcome_of;

    #[test]
    fn outcomes_read_like_the_layer_writes_them() {
        for (member, outcome) in [
            ("lock-core; hit; ttl=30", "hit"),
            (
                "origin; hit, lock-core; fwd=miss; fwd-status=200; stored",
                "computed",
            ),
            ("lock-core; fwd=stale; fwd-status=200", "refreshed"),
            (
                "lock-core; fwd=stale; fwd-status=503; detail=stale-if-error",
                "stale-if-error",
            ),
            ("lock-core; hit; ttl=0; detail=negative", "negative"),
            (
                "lock-core; fwd=miss; fwd-status=503; collapsed",
                "collapsed",
            ),
            (
                "lock-core; fwd=miss; fwd-status=400; detail=status",
                "uncacheable",
            ),
            (
                "lock-core; fwd=miss; fwd-status=400; detail=hit-for-pass",
                "pass",
            ),
        ] {
            assert_eq!(outcome_of(member), outcome, "{member}");
        }
    }
}
