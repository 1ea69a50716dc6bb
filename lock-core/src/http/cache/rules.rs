//! The settings of a response cache layer, checked once when the layer is built.

use std::time::Duration;

use super::headers::is_token;
use super::{HeaderPairs, KeyFn};
use crate::cache::{Freshness, OnBackendError, MAX_WINDOW};
use crate::LockError;

/// The statuses stored by default: RFC 9110 §15.1's heuristically cacheable statuses, without
/// `206` (range requests are not cached).
pub const DEFAULT_STATUSES: [u16; 11] = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501];

/// The default largest body stored: 1 MiB.
pub const DEFAULT_MAX_BODY: u64 = 1 << 20;

/// The default cache name in `Cache-Status`.
pub const DEFAULT_CACHE_NAME: &str = "lock-core";

/// How long a failing response (500, 502, 503, 504, or a body that failed) or an error of the
/// application is remembered by default: 1 s, nginx's microcaching. Within it, requests get
/// the remembered failure without calling the application, so a failing application is called
/// once a second per key, however many requests arrive.
pub const DEFAULT_NEGATIVE_TTL: Duration = Duration::from_secs(1);

/// How long a response that is not stored marks its key pass-through by default: 30 s
/// (Varnish's hit-for-pass). Meanwhile requests for the key go straight to the application,
/// without queueing behind a lease or waiting for one another.
pub const DEFAULT_PASS_THROUGH_TTL: Duration = Duration::from_secs(30);

/// Response headers never stored or replayed: hop-by-hop headers (RFC 9110 §7.6.1), which
/// describe one connection, and `Age` / `Cache-Status`, which the cache computes for each
/// answer. Every `Proxy-*` header and every header the response's `Connection` names are
/// dropped too.
pub const NEVER_REPLAYED: [&str; 9] = [
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "age",
    "cache-status",
    "proxy-connection",
];

/// Request headers refused as `Vary` keys: their values are credentials, which would be
/// written into store keys. Key by principal with a [`KeyFn`] instead.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// What the cache does with a cacheable response that sets a cookie.
///
/// ```
/// use lock_core::http::cache::{CacheRules, SetCookie};
///
/// let rules = CacheRules::builder().set_cookie(SetCookie::DontStore).build().unwrap();
/// assert!(!rules.replays("set-cookie"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetCookie {
    /// Store the response without its `Set-Cookie` lines (the default): the request that
    /// computed it still gets its cookie, nobody else receives it.
    #[default]
    Strip,
    /// Do not store responses that set a cookie.
    DontStore,
    /// Store and replay `Set-Cookie` to everyone (RFC 9111 §7.3 allows it; use only for
    /// cookies that are the same for every client).
    Replay,
}

/// The validated settings of a response cache; build them with [`CacheRules::builder`].
///
/// Defaults: store only responses that give a positive freshness themselves (no default
/// freshness), the statuses of [`DEFAULT_STATUSES`], bodies up to [`DEFAULT_MAX_BODY`], no
/// `Vary` request headers in the key (so a response that varies is not stored), `Set-Cookie`
/// stripped, fail open when the lock backend is down, honour a request's `no-cache`, cache
/// name [`DEFAULT_CACHE_NAME`], key prefix `http:`, failures remembered for
/// [`DEFAULT_NEGATIVE_TTL`], keys whose response is not stored passed through for
/// [`DEFAULT_PASS_THROUGH_TTL`].
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::Freshness;
/// use lock_core::http::cache::CacheRules;
///
/// let rules = CacheRules::builder()
///     .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
///     .statuses([200, 404])
///     .max_body(64 * 1024)
///     .vary("Accept-Language")
///     .build()
///     .unwrap();
/// assert!(rules.stores_status(404) && !rules.stores_status(203));
/// assert_eq!(rules.vary_headers(), ["accept-language"]);
/// assert!(CacheRules::builder().statuses([100]).build().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct CacheRules {
    pub(super) default_freshness: Option<Freshness>,
    pub(super) statuses: Vec<u16>,
    pub(super) max_body: u64,
    pub(super) vary: Vec<String>,
    pub(super) never_replay: Vec<String>,
    pub(super) set_cookie: SetCookie,
    pub(super) on_backend_error: OnBackendError,
    pub(super) honor_request_no_cache: bool,
    pub(super) cache_name: String,
    pub(super) key_prefix: String,
    pub(super) key_fn: Option<KeyFn>,
    pub(super) negative_ttl: Duration,
    pub(super) pass_through_ttl: Duration,
}

impl Default for CacheRules {
    fn default() -> Self {
        Self {
            default_freshness: None,
            statuses: DEFAULT_STATUSES.to_vec(),
            max_body: DEFAULT_MAX_BODY,
            vary: Vec::new(),
            never_replay: Vec::new(),
            set_cookie: SetCookie::default(),
            on_backend_error: OnBackendError::default(),
            honor_request_no_cache: true,
            cache_name: DEFAULT_CACHE_NAME.to_owned(),
            key_prefix: "http:".to_owned(),
            key_fn: None,
            negative_ttl: DEFAULT_NEGATIVE_TTL,
            pass_through_ttl: DEFAULT_PASS_THROUGH_TTL,
        }
    }
}

impl CacheRules {
    /// A builder starting from the defaults.
    pub fn builder() -> CacheRulesBuilder {
        CacheRulesBuilder(Self::default())
    }

    /// The freshness given to responses that state none, if any.
    #[must_use]
    pub fn default_freshness(&self) -> Option<Freshness> {
        self.default_freshness
    }

    /// Whether responses with this status may be stored.
    #[must_use]
    pub fn stores_status(&self, status: u16) -> bool {
        self.statuses.contains(&status)
    }

    /// The largest body stored, in bytes.
    #[must_use]
    pub fn max_body(&self) -> u64 {
        self.max_body
    }

    /// The request headers whose values are part of the key (lower case, in key order).
    #[must_use]
    pub fn vary_headers(&self) -> &[String] {
        &self.vary
    }

    /// The `Vary` to send on a response with `headers` to a request this cache keys: the
    /// response's own members first, as written, then the [`vary_headers`](Self::vary_headers)
    /// it lacks (compared case-insensitively), in key order, on one line that replaces its
    /// `Vary` lines. `None` when its own lines are to be sent as they are: no vary headers,
    /// all of them present, or `Vary: *`. Replayed answers ([`Answer`](super::Answer)) come
    /// with it; for the application's responses an adapter calls
    /// [`FromOrigin::vary_value`](super::FromOrigin::vary_value) and
    /// [`Bypass::vary_value`](super::Bypass::vary_value).
    ///
    /// ```
    /// use lock_core::http::cache::CacheRules;
    ///
    /// let rules = CacheRules::builder().vary("Accept-Language").build().unwrap();
    /// assert_eq!(rules.vary_value(&[("content-type", "text/html")]).as_deref(), Some("accept-language"));
    /// let own = [("Vary", "Accept-Encoding")];
    /// assert_eq!(rules.vary_value(&own).as_deref(), Some("Accept-Encoding, accept-language"));
    /// assert_eq!(rules.vary_value(&[("Vary", "ACCEPT-LANGUAGE")]), None, "already there");
    /// assert_eq!(rules.vary_value(&[("Vary", "*")]), None, "`*` stays");
    /// ```
    #[must_use]
    pub fn vary_value(&self, headers: &(impl HeaderPairs + ?Sized)) -> Option<String> {
        super::vary::merged(headers, &self.vary)
    }

    /// What happens to responses that set a cookie.
    #[must_use]
    pub fn set_cookie(&self) -> SetCookie {
        self.set_cookie
    }

    /// What the cache does when its lock backend cannot be reached.
    #[must_use]
    pub fn on_backend_error(&self) -> OnBackendError {
        self.on_backend_error
    }

    /// The cache's name in `Cache-Status`.
    #[must_use]
    pub fn cache_name(&self) -> &str {
        &self.cache_name
    }

    /// How long a failure is remembered (0: handed only to the requests waiting for it).
    #[must_use]
    pub fn negative_ttl(&self) -> Duration {
        self.negative_ttl
    }

    /// How long a response that is not stored marks its key pass-through (0: not at all).
    #[must_use]
    pub fn pass_through_ttl(&self) -> Duration {
        self.pass_through_ttl
    }

    /// Whether a stored response header `name` is replayed (case-insensitive). Headers the
    /// response's own `Connection` names are dropped as well; see
    /// [`CacheRules::decide_response`].
    ///
    /// ```
    /// use lock_core::http::cache::CacheRules;
    ///
    /// let rules = CacheRules::default();
    /// assert!(rules.replays("Content-Type"));
    /// for name in ["Transfer-Encoding", "Proxy-Authenticate", "Age", "Set-Cookie"] {
    ///     assert!(!rules.replays(name), "{name}");
    /// }
    /// ```
    #[must_use]
    pub fn replays(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let cookie = matches!(name.as_str(), "set-cookie" | "set-cookie2");
        !(NEVER_REPLAYED.contains(&name.as_str())
            || name.starts_with("proxy-")
            || self.never_replay.contains(&name)
            || (cookie && self.set_cookie != SetCookie::Replay))
    }
}

/// Builds [`CacheRules`]; [`build`](CacheRulesBuilder::build) refuses unusable settings.
#[derive(Clone, Debug)]
#[must_use]
pub struct CacheRulesBuilder(CacheRules);

impl CacheRulesBuilder {
    /// The freshness of responses that state none (no `max-age`, `s-maxage` or `Expires`).
    /// Its stale windows also apply to responses that give a lifetime but no windows of their
    /// own, and its early-refresh β to every stored response. (Failures are remembered for
    /// [`negative_ttl`](Self::negative_ttl), not for its `negative` window.)
    pub fn default_freshness(mut self, freshness: Freshness) -> Self {
        self.0.default_freshness = Some(freshness);
        self
    }

    /// Replaces the statuses that may be stored (each a final status from 200 to 599, not 206
    /// or 304).
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.0.statuses = statuses.into_iter().collect();
        self.0.statuses.sort_unstable();
        self.0.statuses.dedup();
        self
    }

    /// The largest body stored; larger responses pass through without being buffered whole.
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.0.max_body = bytes;
        self
    }

    /// Adds a request header to the key, so responses that `Vary` on it can be stored, and
    /// to the `Vary` of every response to a request the cache keys (`GET` and `HEAD`:
    /// computed, replayed, passed by, `304`s included), merged with the response's own (see
    /// [`CacheRules::vary_value`]), so caches further down the line keep the variants apart
    /// too.
    pub fn vary(mut self, name: impl Into<String>) -> Self {
        let name = name.into().to_ascii_lowercase();
        if !self.0.vary.contains(&name) {
            self.0.vary.push(name);
        }
        self
    }

    /// Never stores or replays response header `name`, besides [`NEVER_REPLAYED`].
    pub fn never_replay(mut self, name: impl Into<String>) -> Self {
        self.0.never_replay.push(name.into().to_ascii_lowercase());
        self
    }

    /// What to do with responses that set a cookie (default: strip the cookie).
    pub fn set_cookie(mut self, policy: SetCookie) -> Self {
        self.0.set_cookie = policy;
        self
    }

    /// What the cache does when its lock backend is down (default: fail open).
    pub fn on_backend_error(mut self, policy: OnBackendError) -> Self {
        self.0.on_backend_error = policy;
        self
    }

    /// Whether a request's `Cache-Control: no-cache` / `max-age=0` / `Pragma: no-cache`
    /// makes the cache recompute instead of answering from the store (default: yes, as RFC
    /// 9111 asks). Off, a browser's reload is served from the cache like any request, which is
    /// what stampede protection wants when clients cannot be trusted to be gentle.
    pub fn honor_request_no_cache(mut self, honor: bool) -> Self {
        self.0.honor_request_no_cache = honor;
        self
    }

    /// The cache's name in `Cache-Status` (printable ASCII, 1 to 64 bytes).
    pub fn cache_name(mut self, name: impl Into<String>) -> Self {
        self.0.cache_name = name.into();
        self
    }

    /// Put before every key (default `http:`; at most 64 bytes, no NUL), so the layer's
    /// entries cannot meet the application's own cache keys.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.0.key_prefix = prefix.into();
        self
    }

    /// How long a failure is remembered (default [`DEFAULT_NEGATIVE_TTL`], 1 s): a response
    /// with status 500, 502, 503 or 504, or whose body failed, or an error of the application.
    /// The requests waiting for the request that met it are handed it at once (they replay the
    /// response: status, replayable headers such as `Retry-After`, body; an error or a body
    /// that failed, which cannot be replayed, is a `502` problem), and so are the requests
    /// within this TTL, without calling the application. A stored response within its
    /// `stale-if-error` window is served instead, to all of them. 0: handed to the waiting
    /// requests only, nothing kept.
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.0.negative_ttl = ttl;
        self
    }

    /// How long a response that is not stored (`private`, `no-store`, `Set-Cookie` with
    /// [`SetCookie::DontStore`], `Vary: *`, a status not stored, too large, ...) marks its key
    /// pass-through (default [`DEFAULT_PASS_THROUGH_TTL`], 30 s): meanwhile every request for
    /// the key calls the application at once, without queueing behind a lease or waiting for
    /// another request (`Cache-Status: …; detail=hit-for-pass`); only the decision is stored,
    /// never the response. The requests already waiting when it arrives call the application
    /// themselves either way. 0: no mark.
    pub fn pass_through_ttl(mut self, ttl: Duration) -> Self {
        self.0.pass_through_ttl = ttl;
        self
    }

    /// Computes the key with `key_fn` instead of from method, path, query and `Vary` headers.
    pub fn key_fn(mut self, key_fn: KeyFn) -> Self {
        self.0.key_fn = Some(key_fn);
        self
    }

    /// Checks every setting.
    pub fn build(self) -> Result<CacheRules, LockError> {
        let rules = self.0;
        let refuse = |reason: String| {
            Err(LockError::InvalidConfig(format!(
                "response cache: {reason}"
            )))
        };
        if let Some(freshness) = rules.default_freshness {
            freshness.validate()?;
        }
        for (name, ttl) in [
            ("negative TTL", rules.negative_ttl),
            ("pass-through TTL", rules.pass_through_ttl),
        ] {
            if ttl > MAX_WINDOW {
                return refuse(format!("the {name} {ttl:?} is longer than {MAX_WINDOW:?}"));
            }
        }
        if rules.statuses.is_empty() {
            return refuse("no status to store; remove the layer instead".into());
        }
        if let Some(bad) = rules
            .statuses
            .iter()
            .find(|&&s| !(200..=599).contains(&s) || s == 206 || s == 304)
        {
            return refuse(format!(
                "status {bad} cannot be stored (final statuses 200-599, not 206 or 304)"
            ));
        }
        if rules.max_body == 0 {
            return refuse("the largest body stored must be positive".into());
        }
        for name in rules.vary.iter().chain(&rules.never_replay) {
            if !is_token(name.as_bytes()) {
                return refuse(format!("{name:?} is not a header name"));
            }
        }
        if let Some(bad) = rules
            .vary
            .iter()
            .find(|n| CREDENTIAL_HEADERS.contains(&n.as_str()))
        {
            return refuse(format!(
                "`{bad}` carries credentials and cannot be part of a key; key by principal with a KeyFn"
            ));
        }
        let name = &rules.cache_name;
        if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return refuse(format!(
                "cache name {name:?} must be 1 to 64 bytes of printable ASCII"
            ));
        }
        if rules.key_prefix.len() > 64 || rules.key_prefix.contains('\0') {
            return refuse(format!(
                "key prefix {:?} must be at most 64 bytes without NUL",
                rules.key_prefix
            ));
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests;
