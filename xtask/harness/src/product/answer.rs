//! What the product service answers over HTTP, decided once for both frameworks, and how the
//! demo reads the response cache's `Cache-Status` in front of it.

use lock_core::http::{problem_body, PROBLEM_JSON};

use super::input::{BadInput, BAD_INPUT};

/// The response header that says how the response cache answered (RFC 9211), as the layer in
/// front of the product route writes it.
pub const CACHE_STATUS_HEADER: &str = "cache-status";

/// The problem type of a 503 when the origin failed (and no stale product could stand in).
pub const ORIGIN_UNAVAILABLE: &str = "urn:stampede:origin-unavailable";

/// A short name for how the response cache answered, from its `Cache-Status` member: `hit`,
/// `stale` (stale-while-revalidate), `computed` (this request's response, stored),
/// `collapsed` (another request's), `stale-if-error`, `negative` (a failure remembered),
/// `refreshed` (the refresh this request started, on actix-web), `fail-open`,
/// `wait-timed-out`, `pass` (a pass-through key), or `uncacheable`.
///
/// ```
/// use lock_harness::product::outcome_of;
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

/// An HTTP answer: status, content type, body, and the headers the apps add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProductAnswer {
    /// The status.
    pub status: u16,
    /// `application/json` or `application/problem+json`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// `Retry-After` seconds.
    pub retry_after: Option<u64>,
}

impl ProductAnswer {
    /// A 200 with `body` as JSON.
    #[must_use]
    pub fn json(body: &serde_json::Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            retry_after: None,
        }
    }

    /// The headers to send besides `content-type`.
    #[must_use]
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.retry_after
            .map(|secs| ("retry-after", secs.to_string()))
            .into_iter()
            .collect()
    }

    /// A 400 for `bad`.
    #[must_use]
    pub fn bad_input(bad: &BadInput) -> Self {
        problem(
            400,
            BAD_INPUT,
            "Bad input",
            &bad.detail,
            &[("input", bad.input)],
        )
    }

    /// A 503 when the origin failed: the response cache shares it with the requests waiting
    /// for it and remembers it for its negative TTL.
    #[must_use]
    pub fn origin_unavailable(detail: &str) -> Self {
        Self {
            retry_after: Some(1),
            ..problem(
                503,
                ORIGIN_UNAVAILABLE,
                "Product database unavailable",
                detail,
                &[],
            )
        }
    }
}

fn problem(
    status: u16,
    type_uri: &str,
    title: &str,
    detail: &str,
    extra: &[(&str, &str)],
) -> ProductAnswer {
    ProductAnswer {
        status,
        content_type: PROBLEM_JSON,
        body: problem_body(type_uri, title, status, detail, extra),
        retry_after: None,
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
