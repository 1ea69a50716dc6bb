//! The framework-neutral HTTP decisions of the response cache that the tower and actix
//! adapters share: which requests a `GET`/`HEAD` cache may answer, the key a response is
//! stored under, whether and for how long a response is stored and with which headers, and
//! the `Cache-Status` / `Age` headers of the answer. Everything here is a pure function of
//! plain data (a method, a path, a query, header name/value bytes, a `u16` status) and the
//! layer's [`CacheRules`]; nothing depends on an HTTP crate.
//!
//! An adapter's flow:
//! 1. [`CacheRules::decide_request`]: [`RequestDecision::Bypass`] → call the application and
//!    answer with `Cache-Status: …; fwd=bypass` (or `method`); [`RequestDecision::Refresh`] →
//!    call the application for this request alone; [`RequestDecision::Lookup`] → read the
//!    entry under [`Lookup::key`], and on a miss compute it once across all instances with
//!    lock-core's cache primitive (a `HEAD` is computed as a `GET`).
//! 2. When the application answers, [`CacheRules::decide_response`] says whether to store it,
//!    with which [`Freshness`](crate::cache::Freshness) and which headers
//!    ([`Store`]); a body that grows past [`CacheRules::check_body`] passes through unbuffered.
//! 3. Every answer gets a `Cache-Status` ([`CacheStatusHeader`], built from the primitive's
//!    outcome by [`CacheStatusHeader::from_outcome`]); a replayed answer also gets `Age`
//!    ([`age_value`]). Every answer to a `GET` or `HEAD` names the rules' vary headers in
//!    its `Vary` ([`CacheRules::vary_value`]). When the lock backend is down the cache fails open by default
//!    ([`CacheRules::on_backend_error`]): compute without collapsing, say `detail=fail-open`.
//!
//! Requests are read through [`FullRequestHead`]: the keyed-lock middleware's
//! [`RequestHead`](crate::http::RequestHead) for method, path and query, plus
//! [`HeaderPairs`] for every header line (`Cache-Control`, `Vary` and `Pragma` are lists a
//! message may spread over several lines, and `RequestHead::header` gives only the first).
//!
//! ```
//! use std::time::Duration;
//! use lock_core::cache::Freshness;
//! use lock_core::http::cache::{
//!     age_value, CacheRules, CacheStatusHeader, Forward, RequestDecision, RequestParts, ResponseDecision,
//! };
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! let rules = CacheRules::builder()
//!     .default_freshness(
//!         Freshness::fresh_for(Duration::from_secs(30)).stale_while_revalidate(Duration::from_secs(60)),
//!     )
//!     .vary("Accept-Language")
//!     .build()?;
//!
//! // 1. The request: a plain GET may be answered from the store.
//! let request = RequestParts::get("/products").with_query("page=2").with_header("Accept-Language", "de");
//! let decision = rules.decide_request(&request);
//! let RequestDecision::Lookup(lookup) = &decision else { panic!("a GET is looked up") };
//! assert_eq!(lookup.key.as_str(), "http:GET|/products|?page=2|accept-language=de");
//!
//! // 2. A miss: the application answered, and the response says how long it is fresh.
//! let headers = [
//!     ("Content-Type", "text/html"),
//!     ("Cache-Control", "max-age=120"),
//!     ("Vary", "accept-language"),
//!     ("Set-Cookie", "session=1"),
//!     ("Connection", "close"),
//! ];
//! let ResponseDecision::Store(store) = rules.decide_response(200, &headers, &decision) else {
//!     panic!("a fresh 200 that varies on a keyed header is stored");
//! };
//! assert_eq!(store.freshness.fresh, Duration::from_secs(120));
//! assert_eq!(store.freshness.stale_while_revalidate, Duration::from_secs(60), "the rules' default");
//! let names: Vec<&str> = store.headers.iter().map(|(name, _)| name.as_str()).collect();
//! assert_eq!(names, ["content-type", "cache-control", "vary"], "no cookie, no hop-by-hop");
//!
//! // 3. The status of this miss, and of a hit 30 s later.
//! let fwd = decision.forward().unwrap_or(Forward::Miss);
//! let miss = CacheStatusHeader::forward(fwd).fwd_status(200).stored();
//! assert_eq!(miss.header_value(rules.cache_name()), "lock-core; fwd=miss; fwd-status=200; stored");
//! let hit = CacheStatusHeader::hit().ttl(90);
//! assert_eq!(hit.header_value(rules.cache_name()), "lock-core; hit; ttl=90");
//! assert_eq!(age_value(store.initial_age, Duration::from_secs(30)), "30");
//! # Ok(())
//! # }
//! ```

mod control;
mod existing_status;
pub(crate) mod headers;
mod http_cache;
mod key;
pub(crate) mod origin;
mod request;
mod response;
mod rules;
mod serve;
mod served;
mod status;
mod vary;

pub use control::{pragma_no_cache, CacheControl, DeltaSeconds, DELTA_SECONDS_CAP};
pub use existing_status::existing_cache_status;
pub use headers::{FullRequestHead, HeaderPairs, RequestParts};
pub use http_cache::{Bypass, HttpCache, HttpCacheBuilder, Plan};
pub use key::{CacheKey, KeyFn};
pub use origin::{BodyFailed, ForwardAs, OriginResponse};
pub use request::{BypassReason, Lookup, Refresh, RefreshReason, RequestDecision};
pub use response::{NotStored, ResponseDecision, Store};
pub use rules::{
    CacheRules, CacheRulesBuilder, SetCookie, DEFAULT_CACHE_NAME, DEFAULT_MAX_BODY,
    DEFAULT_NEGATIVE_TTL, DEFAULT_PASS_THROUGH_TTL, DEFAULT_STATUSES, NEVER_REPLAYED,
};
pub use serve::CacheCall;
pub use served::{Answer, FromOrigin, Served};
pub use status::{age_value, CacheStatusHeader, Forward, CACHE_STATUS};
