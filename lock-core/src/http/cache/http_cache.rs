//! [`HttpCache`]: a [`Cache`] with the rules of an HTTP response cache, the one value both
//! adapters hold, and [`HttpCacheBuilder`], the settings they are built with.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::{
    BypassReason, CacheCall, CacheRules, CacheRulesBuilder, CacheStatusHeader, Forward,
    FullRequestHead, HeaderPairs, KeyFn, RequestDecision, SetCookie,
};
use crate::cache::{Cache, Freshness};
use crate::LockError;

/// A response cache: lock-core's stampede-proof [`Cache`] (one computation per missing key
/// across every instance) and the [`CacheRules`] that decide what is stored and replayed.
/// Cheap to clone. `lock_tower::ResponseCacheLayer` and `lock_actix::ResponseCache` are thin
/// adapters around it.
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{Cache, Freshness};
/// use lock_core::http::cache::{HttpCache, Plan, RequestParts};
///
/// # fn main() -> Result<(), lock_core::LockError> {
/// let http = HttpCache::builder(Cache::memory("web")?)
///     .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
///     .vary("Accept-Language")
///     .build()?;
/// assert!(matches!(http.plan(&RequestParts::get("/products/1")), Plan::Cache(_)));
/// let Plan::Bypass(bypass) = http.plan(&RequestParts::new("POST", "/products")) else {
///     panic!("a POST is not cached");
/// };
/// assert_eq!(bypass.cache_status_value(None), "lock-core; fwd=method");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HttpCache {
    shared: Arc<Shared>,
}

struct Shared {
    cache: Cache,
    rules: CacheRules,
    wait: Option<Duration>,
}

impl HttpCache {
    /// Settings starting from the [`CacheRules`] defaults, failing open or closed as `cache`
    /// does.
    pub fn builder(cache: Cache) -> HttpCacheBuilder {
        HttpCacheBuilder::new(cache)
    }

    /// A response cache over `cache` with `rules`. Refused: a largest body the cache cannot
    /// hold ([`CacheBuilder::max_value_bytes`](crate::cache::CacheBuilder::max_value_bytes)),
    /// or rules that fail open when the cache fails closed (or the other way round).
    pub fn new(cache: Cache, rules: CacheRules) -> Result<Self, LockError> {
        Self::assemble(cache, rules, None)
    }

    fn assemble(
        cache: Cache,
        rules: CacheRules,
        wait: Option<Duration>,
    ) -> Result<Self, LockError> {
        let limit = cache.inner.max_value_bytes;
        if rules.max_body() > limit as u64 {
            return Err(LockError::InvalidConfig(format!(
                "response cache: the largest body stored ({} bytes) is more than the cache holds \
                 ({limit} bytes); lower max_body or raise the cache's max_value_bytes",
                rules.max_body()
            )));
        }
        if rules.on_backend_error() != cache.inner.on_backend_error {
            return Err(LockError::InvalidConfig(format!(
                "response cache: the rules say {:?} when the backend is down but the cache says \
                 {:?}; set it once, on the cache",
                rules.on_backend_error(),
                cache.inner.on_backend_error
            )));
        }
        Ok(Self {
            shared: Arc::new(Shared { cache, rules, wait }),
        })
    }

    /// The underlying cache.
    #[must_use]
    pub fn cache(&self) -> &Cache {
        &self.shared.cache
    }

    /// The rules.
    #[must_use]
    pub fn rules(&self) -> &CacheRules {
        &self.shared.rules
    }

    /// How long a request waits for another's computation (`None`: the cache's default).
    #[must_use]
    pub fn wait(&self) -> Option<Duration> {
        self.shared.wait
    }

    /// What to do with `request`: let it pass ([`Plan::Bypass`]: call the application, add
    /// [`Bypass::cache_status_value`] and count the answer with [`Bypass::record`]), or serve
    /// it through the cache ([`Plan::Cache`]).
    #[must_use]
    pub fn plan(&self, request: &impl FullRequestHead) -> Plan {
        let decision = self.rules().decide_request(request);
        if let Some(key) = decision.key().cloned() {
            return Plan::Cache(CacheCall::new(self.clone(), decision, key));
        }
        let reason = match decision {
            RequestDecision::Bypass(reason) => reason,
            _ => BypassReason::KeyFn,
        };
        let mut header = CacheStatusHeader::forward(decision.forward().unwrap_or(Forward::Bypass));
        if reason != BypassReason::Method {
            header = header.detail(reason.as_str());
        }
        // Other methods' responses are not this cache's resources: their `Vary` is theirs.
        let vary = match reason {
            BypassReason::Method => Vec::new(),
            _ => self.rules().vary_headers().to_vec(),
        };
        Plan::Bypass(Bypass {
            reason,
            member: header.header_value(self.rules().cache_name()),
            vary,
        })
    }

    /// The `Cache-Status` member for a request answered with a response its own background
    /// refresh fetched: `fwd=stale` with the application's status. Only adapters that cannot
    /// answer from the store once the request went to the application need it (lock-actix
    /// where no task can be spawned beside the request, which the call consumes).
    #[must_use]
    pub fn refreshed_cache_status(&self, fwd_status: u16) -> String {
        CacheStatusHeader::forward(Forward::Stale)
            .fwd_status(fwd_status)
            .header_value(self.rules().cache_name())
    }

    pub(super) fn max_value_bytes(&self) -> usize {
        self.shared.cache.inner.max_value_bytes
    }
}

impl fmt::Debug for HttpCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCache")
            .field("cache", &self.shared.cache)
            .field("rules", &self.shared.rules)
            .field("wait", &self.shared.wait)
            .finish()
    }
}

/// What [`HttpCache::plan`] says to do with a request. Not `#[non_exhaustive]`, like
/// [`Served`](super::Served): adapters handle every case.
#[derive(Debug)]
pub enum Plan {
    /// Call the application with the request untouched; add the `Cache-Status`.
    Bypass(Bypass),
    /// Serve it with [`CacheCall::serve`].
    Cache(CacheCall),
}

/// A request that passes the cache by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bypass {
    reason: BypassReason,
    member: String,
    vary: Vec<String>,
}

impl Bypass {
    /// Why.
    #[must_use]
    pub fn reason(&self) -> BypassReason {
        self.reason
    }

    /// The `Cache-Status` to send: `existing` (the response's own, from caches nearer the
    /// application) followed by this cache's member (`fwd=method`, or `fwd=bypass` with the
    /// reason as `detail`).
    #[must_use]
    pub fn cache_status_value(&self, existing: Option<&str>) -> String {
        append(existing, &self.member)
    }

    /// The `Vary` to send on the application's response with `headers`, replacing its `Vary`
    /// lines (as [`CacheRules::vary_value`]: a `304` to a conditional `GET` says what its
    /// `200` would); `None`: send them as they are, as for every method but `GET` and `HEAD`.
    ///
    /// ```
    /// use lock_core::cache::Cache;
    /// use lock_core::http::cache::{HttpCache, Plan, RequestParts};
    ///
    /// let http = HttpCache::builder(Cache::memory("web").unwrap()).vary("Accept-Language").build().unwrap();
    /// let conditional = RequestParts::get("/products/1").with_header("If-None-Match", "\"v1\"");
    /// let Plan::Bypass(bypass) = http.plan(&conditional) else { panic!("preconditions pass by") };
    /// assert_eq!(bypass.vary_value(&[("etag", "\"v1\"")]).as_deref(), Some("accept-language"));
    /// let Plan::Bypass(post) = http.plan(&RequestParts::new("POST", "/products")) else { panic!() };
    /// assert_eq!(post.vary_value(&[("etag", "\"v1\"")]), None);
    /// ```
    #[must_use]
    pub fn vary_value(&self, headers: &(impl HeaderPairs + ?Sized)) -> Option<String> {
        super::vary::merged(headers, &self.vary)
    }

    /// The `Cache-Status` and `Vary` to set on the application's response with `headers`,
    /// replacing its own lines: [`cache_status_value`](Self::cache_status_value) after the
    /// response's own `Cache-Status` ([`existing_cache_status`](super::existing_cache_status)),
    /// recorded on the current span's `cache_status` field, and
    /// [`vary_value`](Self::vary_value) (`None`: leave its `Vary` as it is).
    ///
    /// ```
    /// use lock_core::cache::Cache;
    /// use lock_core::http::cache::{HttpCache, Plan, RequestParts};
    ///
    /// let http = HttpCache::builder(Cache::memory("web").unwrap()).build().unwrap();
    /// let Plan::Bypass(bypass) = http.plan(&RequestParts::new("POST", "/orders")) else {
    ///     unreachable!("a POST passes the cache by");
    /// };
    /// let (cache_status, vary) = bypass.answer_headers(&[("cache-status", "app; fwd=miss")]);
    /// assert_eq!(cache_status, "app; fwd=miss, lock-core; fwd=method");
    /// assert_eq!(vary, None);
    /// ```
    #[must_use]
    pub fn answer_headers(
        &self,
        headers: &(impl HeaderPairs + ?Sized),
    ) -> (String, Option<String>) {
        let cache_status =
            self.cache_status_value(super::existing_cache_status(headers).as_deref());
        tracing::Span::current().record("cache_status", cache_status.as_str());
        (cache_status, self.vary_value(headers))
    }

    /// Counts the application's answer to this request in
    /// [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL) (outcome `bypass`):
    /// the adapter hands the status it answered with, or `None` when it failed instead
    /// ([`NO_STATUS`](crate::metrics::NO_STATUS)). Once per request.
    ///
    /// ```
    /// use lock_core::cache::Cache;
    /// use lock_core::http::cache::{HttpCache, Plan, RequestParts};
    ///
    /// let http = HttpCache::builder(Cache::memory("web").unwrap()).build().unwrap();
    /// let Plan::Bypass(bypass) = http.plan(&RequestParts::new("POST", "/orders")) else {
    ///     unreachable!("a POST passes the cache by");
    /// };
    /// // ... the application answered 201:
    /// bypass.record(Some(201));
    /// ```
    pub fn record(&self, status: Option<u16>) {
        crate::http::metrics::http_response(
            crate::http::metrics::LAYER_RESPONSE_CACHE,
            status,
            "bypass",
        );
    }
}

/// `member` after `existing`, as `Cache-Status` lists caches (nearest the origin first).
pub(super) fn append(existing: Option<&str>, member: &str) -> String {
    match existing.map(str::trim).filter(|e| !e.is_empty()) {
        Some(existing) => format!("{existing}, {member}"),
        None => member.to_owned(),
    }
}

/// The settings of a response cache: the [`CacheRules`] (each method is the
/// [`CacheRulesBuilder`] method of the same name) and how long a request waits for another's
/// computation. [`build`](Self::build) checks them all and makes a `T`: an [`HttpCache`], or
/// an adapter's layer (`lock_tower::ResponseCacheLayer::builder`,
/// `lock_actix::ResponseCache::builder`), so both adapters take the same settings.
///
/// ```
/// use lock_core::cache::Cache;
/// use lock_core::http::cache::HttpCache;
///
/// let refused = HttpCache::builder(Cache::memory("web").unwrap()).statuses([206]).build();
/// assert!(refused.unwrap_err().to_string().contains("206"));
/// ```
#[must_use]
pub struct HttpCacheBuilder<T = HttpCache> {
    cache: Cache,
    rules: CacheRulesBuilder,
    wait: Option<Duration>,
    // `fn() -> T`: the builder makes a `T`, it holds none (and stays `Send + Sync`).
    output: PhantomData<fn() -> T>,
}

impl<T> HttpCacheBuilder<T> {
    /// Settings for a response cache over `cache`, from the [`CacheRules`] defaults.
    pub fn new(cache: Cache) -> Self {
        let rules = CacheRules::builder().on_backend_error(cache.inner.on_backend_error);
        Self {
            cache,
            rules,
            wait: None,
            output: PhantomData,
        }
    }

    fn rules(mut self, change: impl FnOnce(CacheRulesBuilder) -> CacheRulesBuilder) -> Self {
        self.rules = change(self.rules);
        self
    }

    /// The freshness of responses that state none (no `max-age`, `s-maxage` or `Expires`);
    /// see [`CacheRulesBuilder::default_freshness`].
    pub fn default_freshness(self, freshness: Freshness) -> Self {
        self.rules(|r| r.default_freshness(freshness))
    }

    /// Replaces the statuses that may be stored (final statuses from 200 to 599, not 206 or
    /// 304); see [`CacheRulesBuilder::statuses`].
    pub fn statuses(self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.rules(|r| r.statuses(statuses))
    }

    /// The largest body stored, at most the cache's largest value; larger responses pass
    /// through unbuffered. See [`CacheRulesBuilder::max_body`].
    pub fn max_body(self, bytes: u64) -> Self {
        self.rules(|r| r.max_body(bytes))
    }

    /// Adds a request header to the key, so responses that `Vary` on it can be stored, and to
    /// the `Vary` of the responses to `GET` and `HEAD`; see [`CacheRulesBuilder::vary`].
    pub fn vary(self, name: impl Into<String>) -> Self {
        self.rules(|r| r.vary(name))
    }

    /// Never stores or replays this response header; see
    /// [`CacheRulesBuilder::never_replay`].
    pub fn never_replay(self, name: impl Into<String>) -> Self {
        self.rules(|r| r.never_replay(name))
    }

    /// What to do with responses that set a cookie (default: strip the cookie); see
    /// [`CacheRulesBuilder::set_cookie`].
    pub fn set_cookie(self, policy: SetCookie) -> Self {
        self.rules(|r| r.set_cookie(policy))
    }

    /// Whether a request's `no-cache` makes the cache recompute (default: yes, as RFC 9111
    /// asks); see [`CacheRulesBuilder::honor_request_no_cache`].
    pub fn honor_request_no_cache(self, honor: bool) -> Self {
        self.rules(|r| r.honor_request_no_cache(honor))
    }

    /// The cache's name in `Cache-Status`; see [`CacheRulesBuilder::cache_name`].
    pub fn cache_name(self, name: impl Into<String>) -> Self {
        self.rules(|r| r.cache_name(name))
    }

    /// Put before every key (default `http:`), so the layer's entries cannot meet the
    /// application's own cache keys; see [`CacheRulesBuilder::key_prefix`].
    pub fn key_prefix(self, prefix: impl Into<String>) -> Self {
        self.rules(|r| r.key_prefix(prefix))
    }

    /// Computes the key with `key_fn` instead of from method, path, query and `Vary` headers;
    /// see [`CacheRulesBuilder::key_fn`].
    pub fn key_fn(self, key_fn: KeyFn) -> Self {
        self.rules(|r| r.key_fn(key_fn))
    }

    /// How long a failure is remembered (default 1 s; 0: handed to the waiting requests
    /// only); see [`CacheRulesBuilder::negative_ttl`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::cache::Cache;
    /// use lock_core::http::cache::HttpCache;
    ///
    /// let http = HttpCache::builder(Cache::memory("web").unwrap())
    ///     .negative_ttl(Duration::from_millis(500))
    ///     .pass_through_ttl(Duration::from_secs(120))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(http.rules().negative_ttl(), Duration::from_millis(500));
    /// ```
    pub fn negative_ttl(self, ttl: Duration) -> Self {
        self.rules(|r| r.negative_ttl(ttl))
    }

    /// How long a response that is not stored marks its key pass-through (default 30 s; 0:
    /// no mark); see [`CacheRulesBuilder::pass_through_ttl`].
    pub fn pass_through_ttl(self, ttl: Duration) -> Self {
        self.rules(|r| r.pass_through_ttl(ttl))
    }

    /// How long a request waits for the response another request (of any instance) is
    /// computing, before it is answered as the cache's wait policy says (default: the cache's
    /// [`wait`](crate::cache::CacheBuilder::wait)).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Checks every setting and builds.
    pub fn build(self) -> Result<T, LockError>
    where
        T: From<HttpCache>,
    {
        if let Some(wait) = self.wait {
            crate::cache::policy::validate_wait("response cache wait", wait)?;
        }
        let http = HttpCache::assemble(self.cache, self.rules.build()?, self.wait)?;
        Ok(T::from(http))
    }
}

impl<T> fmt::Debug for HttpCacheBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCacheBuilder")
            .field("cache", &self.cache)
            .field("rules", &self.rules)
            .field("wait", &self.wait)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::OnBackendError;
    use crate::memory::MemoryResultStore;
    use crate::MemoryBackend;

    fn cache(limit: usize, on_error: OnBackendError) -> Cache {
        Cache::builder(MemoryResultStore::new(), MemoryBackend::new())
            .max_value_bytes(limit)
            .on_backend_error(on_error)
            .build()
            .unwrap()
    }

    #[test]
    fn settings_that_cannot_work_together_are_refused() {
        let open = || cache(1 << 20, OnBackendError::FailOpen);
        assert!(HttpCache::builder(open()).build().is_ok());
        let big = HttpCache::builder(cache(1000, OnBackendError::FailOpen))
            .max_body(1001)
            .build();
        assert!(big.unwrap_err().to_string().contains("max_value_bytes"));
        let closed = CacheRules::builder()
            .on_backend_error(OnBackendError::FailClosed)
            .build()
            .unwrap();
        let mismatch = HttpCache::new(open(), closed.clone());
        assert!(mismatch.unwrap_err().to_string().contains("FailClosed"));
        // The builder takes the cache's policy.
        let closed_cache = cache(1 << 20, OnBackendError::FailClosed);
        let built = HttpCache::builder(closed_cache.clone()).build().unwrap();
        assert_eq!(built.rules().on_backend_error(), OnBackendError::FailClosed);
        assert!(HttpCache::new(closed_cache, closed).is_ok());
        for wait in [
            Duration::ZERO,
            crate::cache::MAX_WINDOW + Duration::from_secs(1),
        ] {
            let refused = HttpCache::builder(open()).wait(wait).build();
            assert!(matches!(refused, Err(LockError::InvalidDuration { .. })));
        }
        let waits = HttpCache::builder(open())
            .wait(Duration::from_secs(2))
            .build();
        assert_eq!(waits.unwrap().wait(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn bypasses_name_their_reason() {
        let http = HttpCache::builder(Cache::memory("t").unwrap())
            .cache_name("edge")
            .build()
            .unwrap();
        let plan = |request| match http.plan(&request) {
            Plan::Bypass(bypass) => bypass.cache_status_value(Some("origin; hit")),
            Plan::Cache(_) => "cache".to_owned(),
        };
        use super::super::RequestParts as P;
        assert_eq!(plan(P::new("DELETE", "/")), "origin; hit, edge; fwd=method");
        assert_eq!(
            plan(P::get("/").with_header("range", "bytes=0-1")),
            "origin; hit, edge; fwd=bypass; detail=range"
        );
        assert_eq!(plan(P::get("/")), "cache");
        assert_eq!(plan(P::get("/").with_header("pragma", "no-cache")), "cache");
    }
}
