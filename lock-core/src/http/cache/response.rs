//! Whether a response is stored, for how long, and with which headers.

use std::time::Duration;

use super::control::{CacheControl, DeltaSeconds, DELTA_SECONDS_CAP};
use super::headers::{has, lines, list_members, HeaderPairs};
use super::{CacheRules, RefreshReason, RequestDecision, SetCookie};
use crate::cache::{Freshness, MAX_WINDOW};

/// The cache's answer to a response, from [`CacheRules::decide_response`].
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::cache::{CacheRules, RequestParts, ResponseDecision};
///
/// let rules = CacheRules::default();
/// let request = rules.decide_request(&RequestParts::get("/a"));
/// let headers = [("Cache-Control", "max-age=60, stale-while-revalidate=30"), ("Age", "10")];
/// let ResponseDecision::Store(store) = rules.decide_response(200, &headers, &request) else {
///     panic!("a fresh 200 is stored");
/// };
/// assert_eq!(store.freshness.fresh, Duration::from_secs(50), "60 s minus the 10 s it is old");
/// assert_eq!(store.freshness.stale_while_revalidate, Duration::from_secs(30));
/// let cc = b"max-age=60, stale-while-revalidate=30".to_vec();
/// assert_eq!(store.headers, [("cache-control".to_owned(), cc)], "Age is recomputed on replay");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResponseDecision {
    /// Store the response.
    Store(Store),
    /// Pass it on without storing it.
    DontStore(NotStored),
}

/// How to store a response.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Store {
    /// Its windows, counted from now (the response's `Age` already taken off `fresh`); valid.
    pub freshness: Freshness,
    /// How old it already was when received (its `Age`): the `Age` sent with a replay is
    /// this plus the time spent in the store.
    pub initial_age: Duration,
    /// The headers to store and replay (names lower case, in order), without those that are
    /// never replayed.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Why a response is not stored.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotStored {
    /// The request was not to be cached.
    Bypassed,
    /// The rules do not store this status.
    Status(u16),
    /// `Cache-Control: no-store`.
    NoStore,
    /// `Cache-Control: private` (qualified or not): a shared cache may not store it.
    Private,
    /// `Cache-Control: no-cache`: it may not be reused without validation, which this cache
    /// does not do.
    NoCache,
    /// The request carried `Authorization` and the response says none of `public`,
    /// `s-maxage`, `must-revalidate` (RFC 9111 §3.5).
    Authorization,
    /// `Vary: *`: no later request can be known to match.
    VaryStar,
    /// `Vary` names a request header that is not part of the key (lower case).
    VaryNotKeyed(String),
    /// `Content-Length` is not a number, or its values disagree.
    BadContentLength,
    /// The body is larger than the rules allow.
    TooLarge {
        /// The largest body stored.
        limit: u64,
    },
    /// It sets a cookie and the rules say [`SetCookie::DontStore`].
    SetCookie,
    /// It states no freshness (`max-age`, `s-maxage`, `Expires`) and the rules give none.
    NoFreshness,
    /// It states no freshness and the request sent `Cookie` or the response sets one: a
    /// default freshness is not applied to what may be personal.
    Personal,
    /// Its `max-age` or `s-maxage` has no valid value (missing, not a number, repeated with
    /// different values): RFC 9111 §4.2.1 has such a response treated as stale.
    InvalidFreshness,
    /// It has `Expires` but no `max-age`/`s-maxage`; this cache does not parse HTTP dates, and
    /// a default freshness would override what the origin said.
    Expires,
    /// It is already stale (`max-age=0`, or an `Age` past its lifetime).
    AlreadyStale,
}

impl CacheRules {
    /// Decides whether the response to `request` (status and every header line) is stored.
    ///
    /// Its freshness is `s-maxage`, else `max-age`, else the rules' default freshness, minus
    /// its `Age`, at most [`MAX_WINDOW`]. Its stale windows are its own
    /// `stale-while-revalidate`/`stale-if-error` (an invalid one grants none), else the rules'
    /// defaults; none at all with `must-revalidate` or `proxy-revalidate`, and no defaults
    /// with `s-maxage` (which implies `proxy-revalidate`, RFC 9111 §5.2.2.10; windows the
    /// response states itself still count, as shared caches commonly honour
    /// `s-maxage=60, stale-while-revalidate=30`).
    pub fn decide_response(
        &self,
        status: u16,
        headers: &(impl HeaderPairs + ?Sized),
        request: &RequestDecision,
    ) -> ResponseDecision {
        match self.storable(status, headers, request) {
            Ok(store) => ResponseDecision::Store(store),
            Err(reason) => ResponseDecision::DontStore(reason),
        }
    }

    /// Whether a body of `bytes` (a `Content-Length`, or the bytes received so far) may still
    /// be stored; past the limit the response passes through without being buffered.
    ///
    /// ```
    /// use lock_core::http::cache::{CacheRules, NotStored};
    ///
    /// let rules = CacheRules::builder().max_body(10).build().unwrap();
    /// assert!(rules.check_body(10).is_ok());
    /// assert_eq!(rules.check_body(11), Err(NotStored::TooLarge { limit: 10 }));
    /// ```
    pub fn check_body(&self, bytes: u64) -> Result<(), NotStored> {
        if bytes > self.max_body {
            return Err(NotStored::TooLarge {
                limit: self.max_body,
            });
        }
        Ok(())
    }

    fn storable(
        &self,
        status: u16,
        headers: &(impl HeaderPairs + ?Sized),
        request: &RequestDecision,
    ) -> Result<Store, NotStored> {
        let (authorized, cookie) = match request {
            RequestDecision::Lookup(l) => (false, l.cookie),
            RequestDecision::Refresh(r) => (r.reason == RefreshReason::Authorization, r.cookie),
            RequestDecision::Bypass(_) => return Err(NotStored::Bypassed),
        };
        if !self.stores_status(status) {
            return Err(NotStored::Status(status));
        }
        let cc = CacheControl::of(headers);
        let refuse = [
            (cc.no_store, NotStored::NoStore),
            (cc.private, NotStored::Private),
            (cc.no_cache, NotStored::NoCache),
        ];
        if let Some((_, reason)) = refuse.into_iter().find(|(applies, _)| *applies) {
            return Err(reason);
        }
        if authorized && !(cc.public || cc.s_maxage.is_present() || cc.must_revalidate) {
            return Err(NotStored::Authorization);
        }
        self.check_vary(headers)?;
        self.check_body(content_length(headers)?.unwrap_or(0))?;
        let sets_cookie = has(headers, "set-cookie") || has(headers, "set-cookie2");
        if sets_cookie && self.set_cookie == SetCookie::DontStore {
            return Err(NotStored::SetCookie);
        }
        let freshness = self.freshness(&cc, headers, cookie || sets_cookie)?;
        Ok(Store {
            freshness: freshness.0,
            initial_age: freshness.1,
            headers: self.replayed(headers),
        })
    }

    fn check_vary(&self, headers: &(impl HeaderPairs + ?Sized)) -> Result<(), NotStored> {
        for name in list_members(&lines(headers, "vary")) {
            if name == b"*" {
                return Err(NotStored::VaryStar);
            }
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            if !self.vary.contains(&name) {
                return Err(NotStored::VaryNotKeyed(name));
            }
        }
        Ok(())
    }

    /// The windows and the initial age, or why there are none.
    fn freshness(
        &self,
        cc: &CacheControl,
        headers: &(impl HeaderPairs + ?Sized),
        personal: bool,
    ) -> Result<(Freshness, Duration), NotStored> {
        let secs = Duration::from_secs;
        let lifetime = match (cc.s_maxage, cc.max_age) {
            (DeltaSeconds::Seconds(s), _) | (DeltaSeconds::Absent, DeltaSeconds::Seconds(s)) => {
                secs(s)
            }
            (DeltaSeconds::Absent, DeltaSeconds::Absent) if has(headers, "expires") => {
                return Err(NotStored::Expires)
            }
            (DeltaSeconds::Absent, DeltaSeconds::Absent) => match self.default_freshness {
                Some(_) if personal => return Err(NotStored::Personal),
                Some(default) => default.fresh,
                None => return Err(NotStored::NoFreshness),
            },
            _ => return Err(NotStored::InvalidFreshness),
        };
        let initial_age = secs(age(headers));
        let fresh = lifetime.saturating_sub(initial_age).min(MAX_WINDOW);
        if fresh.is_zero() {
            return Err(NotStored::AlreadyStale);
        }
        let defaults = self.default_freshness.filter(|_| !cc.s_maxage.is_present());
        let window = |own: DeltaSeconds, default: Option<Duration>| {
            let window = match own {
                _ if cc.must_revalidate || cc.proxy_revalidate => Duration::ZERO,
                DeltaSeconds::Seconds(s) => secs(s),
                DeltaSeconds::Absent => default.unwrap_or_default(),
                _ => Duration::ZERO,
            };
            window.min(MAX_WINDOW)
        };
        let freshness = Freshness::fresh_for(fresh)
            .stale_while_revalidate(window(
                cc.stale_while_revalidate,
                defaults.map(|d| d.stale_while_revalidate),
            ))
            .stale_if_error(window(
                cc.stale_if_error,
                defaults.map(|d| d.stale_if_error),
            ))
            .negative_ttl(
                self.default_freshness
                    .map_or(Duration::ZERO, |d| d.negative),
            )
            .early_refresh(self.default_freshness.map_or(0.0, |d| d.early_refresh_beta));
        let freshness = freshness
            .validate()
            .map_err(|_| NotStored::InvalidFreshness)?;
        Ok((freshness, initial_age))
    }

    /// The header lines to store: all but those never replayed and those the response's
    /// `Connection` names (RFC 9110 §7.6.1).
    pub(super) fn replayed(&self, headers: &(impl HeaderPairs + ?Sized)) -> Vec<(String, Vec<u8>)> {
        let connection = lines(headers, "connection");
        let nominated: Vec<String> = list_members(&connection)
            .into_iter()
            .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
            .collect();
        let mut kept = Vec::new();
        headers.for_each_header(&mut |name, value| {
            let name = name.to_ascii_lowercase();
            if self.replays(&name) && !nominated.contains(&name) {
                kept.push((name, value.to_vec()));
            }
        });
        kept
    }
}

/// The `Content-Length`, `Err` when it is malformed or its values disagree (RFC 9112 §6.3
/// accepts a repeated identical value).
fn content_length(headers: &(impl HeaderPairs + ?Sized)) -> Result<Option<u64>, NotStored> {
    let mut length = None;
    for member in list_members(&lines(headers, "content-length")) {
        if !member.iter().all(u8::is_ascii_digit) {
            return Err(NotStored::BadContentLength);
        }
        let value = std::str::from_utf8(member)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or(NotStored::BadContentLength)?;
        if length.is_some_and(|l| l != value) {
            return Err(NotStored::BadContentLength);
        }
        length = Some(value);
    }
    Ok(length)
}

/// The response's `Age` in seconds: the first member of the first line, ignored (0) when it
/// is not a number (RFC 9111 §5.1), at most 2³¹.
fn age(headers: &(impl HeaderPairs + ?Sized)) -> u64 {
    let age = lines(headers, "age");
    let Some(first) = list_members(&age).into_iter().next() else {
        return 0;
    };
    if !first.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    first.iter().fold(0u64, |acc, d| {
        (acc * 10 + u64::from(d - b'0')).min(DELTA_SECONDS_CAP)
    })
}

#[cfg(test)]
mod tests;
