//! The `Cache-Control` semantics table: per row, what an origin answers, what the request
//! asks, and what the response cache must make of it.

use super::{HIT, MISS_STORED};

/// One row of the semantics table: the same request sent twice to an application answering
/// `status` with `response` headers.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) name: &'static str,
    pub(super) request: &'static [(&'static str, &'static str)],
    pub(super) status: u16,
    pub(super) response: &'static [(&'static str, &'static str)],
    /// `Cache-Status` (without `ttl`) of the first and the second answer.
    pub(super) first: &'static str,
    pub(super) second: &'static str,
    /// The status both answers have, when it is not `status`.
    pub(super) answered: Option<u16>,
    /// How many times the application ran for the two requests.
    pub(super) calls: usize,
    /// The second answer's `Age`, and the `ttl` range of its `Cache-Status`.
    pub(super) age: Option<&'static str>,
    pub(super) ttl: Option<(i64, i64)>,
}

/// `Cache-Status` of a response computed anew for the request, and stored.
const REFRESHED: &str = "lock-core; fwd=request; fwd-status=200; stored";

/// `Cache-Status` of a `200` forwarded at once for a key marked pass-through.
const PASSED: &str = "lock-core; fwd=miss; fwd-status=200; detail=hit-for-pass";

/// The rows, in the order they are sent.
pub(super) fn rows() -> Vec<Row> {
    let stored = |name, response, age, ttl| Row {
        name,
        request: &[],
        status: 200,
        response,
        first: MISS_STORED,
        second: HIT,
        answered: None,
        calls: 1,
        age: Some(age),
        ttl: Some(ttl),
    };
    // Not stored: the second request passes through at once (the key is marked).
    let not_stored = |name, status, response, detail| Row {
        name,
        request: &[],
        status,
        response,
        first: detail,
        second: PASSED,
        answered: None,
        calls: 2,
        age: None,
        ttl: None,
    };
    let asks = |name, request, first, second, calls| Row {
        name,
        request,
        status: 200,
        response: &[("cache-control", "max-age=60")],
        first,
        second,
        answered: None,
        calls,
        age: None,
        ttl: None,
    };
    vec![
        stored("max-age", &[("cache-control", "max-age=60")], "0", (59, 60)),
        stored(
            "s-maxage wins over max-age",
            &[("cache-control", "max-age=0, s-maxage=30")],
            "0",
            (29, 30),
        ),
        stored(
            "the response's Age counts",
            &[("cache-control", "max-age=60"), ("age", "20")],
            "20",
            (39, 40),
        ),
        stored(
            "public",
            &[("cache-control", "public, max-age=60")],
            "0",
            (59, 60),
        ),
        Row {
            first: "lock-core; fwd=miss; fwd-status=404; stored",
            status: 404,
            ..stored(
                "404 is stored",
                &[("cache-control", "max-age=60")],
                "0",
                (59, 60),
            )
        },
        not_stored(
            "no-store",
            200,
            &[("cache-control", "no-store, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=no-store",
        ),
        not_stored(
            "private",
            200,
            &[("cache-control", "private, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=private",
        ),
        not_stored(
            "no-cache response",
            200,
            &[("cache-control", "no-cache, max-age=60")],
            "lock-core; fwd=miss; fwd-status=200; detail=no-cache",
        ),
        not_stored(
            "no freshness and no default",
            200,
            &[],
            "lock-core; fwd=miss; fwd-status=200; detail=no-freshness",
        ),
        not_stored(
            "max-age=0",
            200,
            &[("cache-control", "max-age=0")],
            "lock-core; fwd=miss; fwd-status=200; detail=already-stale",
        ),
        not_stored(
            "Vary on a header outside the key",
            200,
            &[("cache-control", "max-age=60"), ("vary", "accept-encoding")],
            "lock-core; fwd=miss; fwd-status=200; detail=vary",
        ),
        Row {
            second: "lock-core; hit; detail=negative",
            calls: 1,
            age: Some("0"),
            ..not_stored(
                "500 is not stored; remembered for the negative TTL",
                500,
                &[("cache-control", "max-age=60")],
                "lock-core; fwd=miss; fwd-status=500; detail=status",
            )
        },
        Row {
            second: "lock-core; fwd=miss; fwd-status=206; detail=hit-for-pass",
            ..not_stored(
                "206 is not stored",
                206,
                &[("cache-control", "max-age=60")],
                "lock-core; fwd=miss; fwd-status=206; detail=status",
            )
        },
        asks(
            "request no-cache recomputes",
            &[("cache-control", "no-cache")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request max-age=0 recomputes",
            &[("cache-control", "max-age=0")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request Pragma: no-cache recomputes",
            &[("pragma", "no-cache")],
            REFRESHED,
            REFRESHED,
            2,
        ),
        asks(
            "request max-age within the age is a hit",
            &[("cache-control", "max-age=30")],
            MISS_STORED,
            HIT,
            1,
        ),
        asks(
            "request no-store passes",
            &[("cache-control", "no-store")],
            "lock-core; fwd=bypass; detail=no-store",
            "lock-core; fwd=bypass; detail=no-store",
            2,
        ),
        asks(
            "Range passes",
            &[("range", "bytes=0-1")],
            "lock-core; fwd=bypass; detail=range",
            "lock-core; fwd=bypass; detail=range",
            2,
        ),
        asks(
            "preconditions pass",
            &[("if-none-match", "\"x\"")],
            "lock-core; fwd=bypass; detail=conditional",
            "lock-core; fwd=bypass; detail=conditional",
            2,
        ),
        asks(
            "Authorization is answered alone",
            &[("authorization", "Bearer t")],
            "lock-core; fwd=request; fwd-status=200; detail=authorization",
            "lock-core; fwd=request; fwd-status=200; detail=authorization",
            2,
        ),
        Row {
            answered: Some(504),
            ..asks(
                "only-if-cached on a miss is a 504",
                &[("cache-control", "only-if-cached")],
                "lock-core; fwd=miss; detail=only-if-cached",
                "lock-core; fwd=miss; detail=only-if-cached",
                0,
            )
        },
    ]
}
