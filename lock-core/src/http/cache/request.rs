//! What the cache does with a request: look it up, recompute it, or let it pass.

use std::time::Duration;

use super::control::{pragma_no_cache, CacheControl, DeltaSeconds};
use super::headers::{FullRequestHead, HeaderPairs};
use super::{CacheKey, CacheRules, Forward};

/// The cache's answer to a request, from [`CacheRules::decide_request`].
///
/// ```
/// use lock_core::http::cache::{BypassReason, CacheRules, RefreshReason, RequestDecision, RequestParts};
///
/// let rules = CacheRules::default();
/// let get = rules.decide_request(&RequestParts::get("/a"));
/// assert!(matches!(get, RequestDecision::Lookup(_)));
/// let reload = rules.decide_request(&RequestParts::get("/a").with_header("Cache-Control", "no-cache"));
/// assert!(matches!(reload, RequestDecision::Refresh(r) if r.reason == RefreshReason::NoCache));
/// let post = rules.decide_request(&RequestParts::new("POST", "/a"));
/// assert_eq!(post, RequestDecision::Bypass(BypassReason::Method));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestDecision {
    /// Answer from the store when a stored response can serve the request (fresh, or stale
    /// within its windows); on a miss compute it once across instances, and store the result
    /// as [`CacheRules::decide_response`] says.
    Lookup(Lookup),
    /// Do not answer from the store: forward this request on its own (not collapsed with
    /// other requests, not handed to them), then store its response as
    /// [`CacheRules::decide_response`] says, replacing the entry.
    Refresh(Refresh),
    /// Pass the request through: nothing is read from or written to the store.
    Bypass(BypassReason),
}

impl RequestDecision {
    /// The key, unless the request bypasses the cache.
    #[must_use]
    pub fn key(&self) -> Option<&CacheKey> {
        match self {
            Self::Lookup(lookup) => Some(&lookup.key),
            Self::Refresh(refresh) => Some(&refresh.key),
            Self::Bypass(_) => None,
        }
    }

    /// The `Cache-Status` `fwd` value the decision implies by itself: `method` or `bypass`
    /// for a bypass, `request` for a refresh; `None` for a lookup (a hit, or a miss found
    /// later).
    ///
    /// ```
    /// use lock_core::http::cache::{CacheRules, Forward, RequestParts};
    ///
    /// let rules = CacheRules::default();
    /// let put = rules.decide_request(&RequestParts::new("PUT", "/"));
    /// assert_eq!(put.forward(), Some(Forward::Method));
    /// ```
    #[must_use]
    pub fn forward(&self) -> Option<Forward> {
        match self {
            Self::Lookup(_) => None,
            Self::Refresh(_) => Some(Forward::Request),
            Self::Bypass(BypassReason::Method) => Some(Forward::Method),
            Self::Bypass(_) => Some(Forward::Bypass),
        }
    }
}

/// A request the store may answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lookup {
    /// Where its response is stored.
    pub key: CacheKey,
    /// The request's `max-age`: a stored response older than this must not answer it (treat
    /// the entry as a miss). `None` when the request sets no limit.
    pub max_age: Option<Duration>,
    /// `only-if-cached`: when the store cannot answer, reply `504 Gateway Timeout` instead of
    /// forwarding the request (RFC 9111 §5.2.1.7).
    pub only_if_cached: bool,
    /// A `HEAD`, which reads the `GET` entry: on a miss, forward it as a `GET` (so the entry
    /// holds the body) and send the client the headers only; if it is forwarded as a `HEAD`,
    /// its response must not be stored.
    pub head: bool,
    pub(super) cookie: bool,
}

/// A request that must be answered by recomputing, whose response may still be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refresh {
    /// Where its response is stored.
    pub key: CacheKey,
    /// Why the store may not answer it.
    pub reason: RefreshReason,
    /// A `HEAD`: as in [`Lookup::head`].
    pub head: bool,
    pub(super) cookie: bool,
}

/// Why a request is recomputed instead of answered from the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefreshReason {
    /// `Cache-Control: no-cache` (a browser's reload).
    NoCache,
    /// `Cache-Control: max-age=0`, or a `max-age` that is not a number (read as 0, the
    /// strictest value, rather than ignored).
    MaxAgeZero,
    /// `Pragma: no-cache`, in a request without `Cache-Control` (RFC 9111 §5.4).
    PragmaNoCache,
    /// The request carries `Authorization` (RFC 9111 §3.5). Its response may depend on who
    /// asked, so it is never answered from the store nor shared with other requests; it is
    /// stored only when it says `public`, `s-maxage` or `must-revalidate`.
    Authorization,
}

/// Why a request passes through the cache untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BypassReason {
    /// Not `GET` or `HEAD`.
    Method,
    /// `Cache-Control: no-store`: nothing of this exchange may be stored.
    NoStore,
    /// `Range`: partial responses are not cached.
    Range,
    /// A precondition (`If-None-Match`, `If-Modified-Since`, `If-Match`,
    /// `If-Unmodified-Since`, `If-Range`): the application evaluates it and may answer 304.
    Conditional,
    /// `Upgrade` (a WebSocket handshake, h2c).
    Upgrade,
    /// A request body (`Content-Length` other than 0, or `Transfer-Encoding`): the key does
    /// not cover it.
    Body,
    /// The rules' [`KeyFn`](super::KeyFn) returned `None`.
    KeyFn,
}

impl BypassReason {
    /// A short name for logs and `Cache-Status` `detail`.
    ///
    /// ```
    /// assert_eq!(lock_core::http::cache::BypassReason::NoStore.as_str(), "no-store");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Method => "method",
            Self::NoStore => "no-store",
            Self::Range => "range",
            Self::Conditional => "conditional",
            Self::Upgrade => "upgrade",
            Self::Body => "body",
            Self::KeyFn => "key-fn",
        }
    }
}

/// What the request's headers say, in one pass over them.
#[derive(Default)]
struct Facts {
    cache_control: Vec<Vec<u8>>,
    pragma: Vec<Vec<u8>>,
    authorization: bool,
    cookie: bool,
    range: bool,
    conditional: bool,
    upgrade: bool,
    body: bool,
}

impl Facts {
    fn of(headers: &(impl HeaderPairs + ?Sized)) -> Self {
        let mut facts = Self::default();
        headers.for_each_header(&mut |name, value| {
            let is = |n: &str| name.eq_ignore_ascii_case(n);
            if is("cache-control") {
                facts.cache_control.push(value.to_vec());
            } else if is("pragma") {
                facts.pragma.push(value.to_vec());
            } else if is("authorization") {
                facts.authorization = true;
            } else if is("cookie") {
                facts.cookie = true;
            } else if is("range") {
                facts.range = true;
            } else if [
                "if-none-match",
                "if-modified-since",
                "if-match",
                "if-unmodified-since",
                "if-range",
            ]
            .iter()
            .any(|n| is(n))
            {
                facts.conditional = true;
            } else if is("upgrade") {
                facts.upgrade = true;
            } else if is("transfer-encoding")
                || (is("content-length") && value.trim_ascii() != b"0")
            {
                facts.body = true;
            }
        });
        facts
    }
}

impl CacheRules {
    /// Decides what the cache does with `request`. Checks, in order: the method (`GET` and
    /// `HEAD`, as sent: methods are case-sensitive), `no-store`, `Range`, preconditions,
    /// `Upgrade`, a body, the key function, `Authorization`, then (unless
    /// [`honor_request_no_cache`](super::CacheRulesBuilder::honor_request_no_cache) is off)
    /// `no-cache`, `max-age=0` and `Pragma: no-cache`.
    #[must_use]
    pub fn decide_request(&self, request: &impl FullRequestHead) -> RequestDecision {
        let method = request.method();
        if method != "GET" && method != "HEAD" {
            return RequestDecision::Bypass(BypassReason::Method);
        }
        let facts = Facts::of(request);
        let cc = CacheControl::parse(&facts.cache_control);
        let bypass = [
            (cc.no_store, BypassReason::NoStore),
            (facts.range, BypassReason::Range),
            (facts.conditional, BypassReason::Conditional),
            (facts.upgrade, BypassReason::Upgrade),
            (facts.body, BypassReason::Body),
        ];
        if let Some((_, reason)) = bypass.into_iter().find(|(applies, _)| *applies) {
            return RequestDecision::Bypass(reason);
        }
        let Some(key) = self.cache_key(request) else {
            return RequestDecision::Bypass(BypassReason::KeyFn);
        };
        let head = method == "HEAD";
        let honor = self.honor_request_no_cache;
        let refresh = if facts.authorization {
            Some(RefreshReason::Authorization)
        } else if honor && cc.no_cache {
            Some(RefreshReason::NoCache)
        } else if honor && matches!(cc.max_age, DeltaSeconds::Seconds(0) | DeltaSeconds::Invalid) {
            Some(RefreshReason::MaxAgeZero)
        } else if honor && facts.cache_control.is_empty() && pragma_no_cache(&facts.pragma) {
            Some(RefreshReason::PragmaNoCache)
        } else {
            None
        };
        match refresh {
            Some(reason) => RequestDecision::Refresh(Refresh {
                key,
                reason,
                head,
                cookie: facts.cookie,
            }),
            None => RequestDecision::Lookup(Lookup {
                key,
                max_age: cc
                    .max_age
                    .seconds()
                    .filter(|_| honor)
                    .map(Duration::from_secs),
                only_if_cached: cc.only_if_cached,
                head,
                cookie: facts.cookie,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::cache::RequestParts;

    /// A compact rendering of a decision for table rows.
    fn outcome(decision: &RequestDecision) -> String {
        match decision {
            RequestDecision::Lookup(l) => format!(
                "lookup{}{}{}",
                l.max_age
                    .map(|a| format!(" max-age={}", a.as_secs()))
                    .unwrap_or_default(),
                if l.only_if_cached {
                    " only-if-cached"
                } else {
                    ""
                },
                if l.head { " head" } else { "" },
            ),
            RequestDecision::Refresh(r) => format!("refresh {:?}", r.reason),
            RequestDecision::Bypass(reason) => format!("bypass {}", reason.as_str()),
        }
    }

    #[test]
    fn decisions_table() {
        let g = RequestParts::get;
        let h = |name: &str, value: &str| g("/").with_header(name, value);
        let rows: Vec<(RequestParts, &str)> = vec![
            (g("/"), "lookup"),
            (RequestParts::new("HEAD", "/"), "lookup head"),
            (RequestParts::new("get", "/"), "bypass method"),
            (RequestParts::new("POST", "/"), "bypass method"),
            (RequestParts::new("OPTIONS", "*"), "bypass method"),
            (h("Cache-Control", "no-store"), "bypass no-store"),
            (h("cache-control", "max-age=5, NO-STORE"), "bypass no-store"),
            (h("Range", "bytes=0-1"), "bypass range"),
            (h("If-None-Match", "\"x\""), "bypass conditional"),
            (h("if-modified-since", "x"), "bypass conditional"),
            (h("Upgrade", "websocket"), "bypass upgrade"),
            (h("Content-Length", "3"), "bypass body"),
            (h("Content-Length", "x"), "bypass body"),
            (h("Content-Length", " 0 "), "lookup"),
            (h("Transfer-Encoding", "chunked"), "bypass body"),
            (h("Authorization", "Bearer x"), "refresh Authorization"),
            (
                g("/")
                    .with_header("Authorization", "x")
                    .with_header("cache-control", "no-cache"),
                "refresh Authorization",
            ),
            (h("Cache-Control", "no-cache"), "refresh NoCache"),
            (h("Cache-Control", "max-age=0"), "refresh MaxAgeZero"),
            (h("Cache-Control", "max-age=soon"), "refresh MaxAgeZero"),
            (
                h("Cache-Control", "max-age=1, max-age=2"),
                "refresh MaxAgeZero",
            ),
            (h("Cache-Control", "max-age=30"), "lookup max-age=30"),
            (
                h("Cache-Control", "only-if-cached"),
                "lookup only-if-cached",
            ),
            (h("Pragma", "no-cache"), "refresh PragmaNoCache"),
            (
                g("/")
                    .with_header("Pragma", "no-cache")
                    .with_header("Cache-Control", "max-age=9"),
                "lookup max-age=9",
            ),
            (h("Cookie", "a=1"), "lookup"),
            (h("Cache-Control", "no-transform, x=\"no-cache\""), "lookup"),
        ];
        let rules = CacheRules::default();
        for (request, expected) in rows {
            assert_eq!(
                outcome(&rules.decide_request(&request)),
                expected,
                "{request:?}"
            );
        }
    }

    #[test]
    fn request_no_cache_can_be_ignored() {
        let rules = CacheRules::builder()
            .honor_request_no_cache(false)
            .build()
            .unwrap();
        for cc in ["no-cache", "max-age=0", "max-age=30"] {
            let request = RequestParts::get("/").with_header("cache-control", cc);
            assert_eq!(outcome(&rules.decide_request(&request)), "lookup", "{cc}");
        }
        let pragma = RequestParts::get("/").with_header("pragma", "no-cache");
        assert_eq!(outcome(&rules.decide_request(&pragma)), "lookup");
        let auth = RequestParts::get("/").with_header("authorization", "x");
        assert_eq!(
            outcome(&rules.decide_request(&auth)),
            "refresh Authorization"
        );
    }

    #[test]
    fn keys_and_forward_values() {
        let rules = CacheRules::default();
        let lookup = rules.decide_request(&RequestParts::get("/k"));
        assert_eq!(lookup.key().unwrap().as_str(), "http:GET|/k|");
        assert_eq!(lookup.forward(), None);
        let refresh =
            rules.decide_request(&RequestParts::get("/k").with_header("pragma", "no-cache"));
        assert_eq!(refresh.key(), lookup.key());
        assert_eq!(refresh.forward(), Some(Forward::Request));
        let bypass = rules.decide_request(&RequestParts::get("/k").with_header("range", "x"));
        assert_eq!(
            (bypass.key(), bypass.forward()),
            (None, Some(Forward::Bypass))
        );
    }
}
