//! The `Cache-Status` response header (RFC 9211) and the `Age` of a replayed response.
//!
//! `Cache-Status` is a structured-field list (RFC 8941); this cache writes one member: its
//! name (a token when it can be one, else a string), then `;`-parameters, booleans written
//! bare (`hit`, not `hit=?1`). A response that already carries `Cache-Status` from a cache
//! nearer the origin gets this member appended after `", "`.

use std::time::Duration;

use super::control::DELTA_SECONDS_CAP;
use crate::cache::CacheStatus;

/// The header's name.
pub const CACHE_STATUS: &str = "cache-status";

/// Why the request went forward to the application (RFC 9211 §2.2 `fwd`).
///
/// ```
/// use lock_core::http::cache::Forward;
///
/// assert_eq!(Forward::UriMiss.as_str(), "uri-miss");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Forward {
    /// The cache was configured not to handle this request.
    Bypass,
    /// The method is not cacheable.
    Method,
    /// Nothing was stored for the URI.
    UriMiss,
    /// Something was stored for the URI, but not for these request headers.
    VaryMiss,
    /// Nothing stored could serve it (when uri-miss and vary-miss cannot be told apart).
    Miss,
    /// The request asked for a response from the application (`no-cache`, `max-age=0`,
    /// `Authorization`).
    Request,
    /// A stored response was found but was stale.
    Stale,
    /// Only part of the response was stored.
    Partial,
}

impl Forward {
    /// The token written after `fwd=`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bypass => "bypass",
            Self::Method => "method",
            Self::UriMiss => "uri-miss",
            Self::VaryMiss => "vary-miss",
            Self::Miss => "miss",
            Self::Request => "request",
            Self::Stale => "stale",
            Self::Partial => "partial",
        }
    }
}

/// One cache's `Cache-Status` member: either a hit or a forward (never both), with the
/// optional parameters of RFC 9211.
///
/// ```
/// use lock_core::http::cache::{CacheStatusHeader, Forward};
///
/// assert_eq!(CacheStatusHeader::hit().ttl(42).header_value("lock-core"), "lock-core; hit; ttl=42");
/// let miss = CacheStatusHeader::forward(Forward::UriMiss).fwd_status(200).stored().collapsed();
/// assert_eq!(miss.header_value("edge"), "edge; fwd=uri-miss; fwd-status=200; stored; collapsed");
/// let down = CacheStatusHeader::forward(Forward::Miss).fail_open();
/// assert_eq!(down.header_value("my cache"), r#""my cache"; fwd=miss; detail=fail-open"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct CacheStatusHeader {
    /// Why the request went forward; `None`: it was a hit (served from the store).
    pub fwd: Option<Forward>,
    /// The status the application answered with, when forwarded.
    pub fwd_status: Option<u16>,
    /// The response's remaining freshness in seconds; negative when served stale.
    pub ttl: Option<i64>,
    /// Whether the forwarded response was stored.
    pub stored: bool,
    /// Whether this request shared another request's computation.
    pub collapsed: bool,
    /// Free-form detail (`fail-open`, a bypass reason).
    pub detail: Option<String>,
}

impl CacheStatusHeader {
    /// Served from the store.
    pub fn hit() -> Self {
        Self {
            fwd: None,
            fwd_status: None,
            ttl: None,
            stored: false,
            collapsed: false,
            detail: None,
        }
    }

    /// Forwarded to the application, for this reason.
    pub fn forward(reason: Forward) -> Self {
        Self {
            fwd: Some(reason),
            ..Self::hit()
        }
    }

    /// The application's status.
    pub fn fwd_status(mut self, status: u16) -> Self {
        self.fwd_status = Some(status);
        self
    }

    /// Seconds of freshness left (negative: stale by that much).
    pub fn ttl(mut self, seconds: i64) -> Self {
        self.ttl = Some(seconds);
        self
    }

    /// The response was stored.
    pub fn stored(mut self) -> Self {
        self.stored = true;
        self
    }

    /// The request was collapsed with others into one computation.
    pub fn collapsed(mut self) -> Self {
        self.collapsed = true;
        self
    }

    /// Free-form detail.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// `detail=fail-open`: the lock backend was down, the request was computed without
    /// collapsing across instances.
    pub fn fail_open(self) -> Self {
        self.detail("fail-open")
    }

    /// The header for an outcome of lock-core's cache primitive (the adapter adds `ttl`,
    /// `fwd-status` and, for a response it did not store, clears `stored`):
    ///
    /// | outcome | header |
    /// |---|---|
    /// | `Hit` | `hit` |
    /// | `Stale` (within stale-while-revalidate) | `hit; detail=stale-while-revalidate` |
    /// | `Computed` | `fwd=miss; stored` |
    /// | `Collapsed` (handed another caller's value) | `fwd=miss; collapsed` |
    /// | `StaleIfError` | `fwd=stale; detail=stale-if-error` |
    /// | `FailOpen` (lock backend down) | `fwd=miss; detail=fail-open` |
    /// | `WaitTimedOut` | `fwd=miss; detail=wait-timed-out` |
    /// | `Uncacheable` | `fwd=miss; detail=uncacheable` (the adapter names the reason) |
    /// | `PassThrough` (the key is marked pass-through) | `fwd=miss; detail=hit-for-pass` |
    ///
    /// A failure the cache hands on is not an outcome of these: see
    /// [`CacheCall::serve`](super::CacheCall::serve) (`fwd=miss; fwd-status=503; collapsed`
    /// for the requests that waited for it, `hit; detail=negative` while it is remembered).
    ///
    /// ```
    /// use lock_core::cache::CacheStatus;
    /// use lock_core::http::cache::CacheStatusHeader;
    ///
    /// let header = CacheStatusHeader::from_outcome(CacheStatus::FailOpen).fwd_status(200);
    /// assert_eq!(header.header_value("lc"), "lc; fwd=miss; fwd-status=200; detail=fail-open");
    /// ```
    pub fn from_outcome(outcome: CacheStatus) -> Self {
        let miss = || Self::forward(Forward::Miss);
        match outcome {
            CacheStatus::Hit => Self::hit(),
            CacheStatus::Stale => Self::hit().detail("stale-while-revalidate"),
            CacheStatus::Computed => miss().stored(),
            CacheStatus::Collapsed => miss().collapsed(),
            CacheStatus::StaleIfError => Self::forward(Forward::Stale).detail("stale-if-error"),
            CacheStatus::FailOpen => miss().fail_open(),
            CacheStatus::WaitTimedOut => miss().detail("wait-timed-out"),
            CacheStatus::Uncacheable => miss().detail("uncacheable"),
            CacheStatus::PassThrough => miss().detail("hit-for-pass"),
        }
    }

    /// The member for cache `name`, as a header value. Always valid structured-field syntax:
    /// a name or detail that cannot be a token is written as a string, and characters a
    /// string cannot hold (control and non-ASCII) are dropped.
    #[must_use]
    pub fn header_value(&self, name: &str) -> String {
        let mut out = bare_item(name);
        match self.fwd {
            None => out.push_str("; hit"),
            Some(fwd) => {
                out.push_str("; fwd=");
                out.push_str(fwd.as_str());
            }
        }
        if let Some(status) = self.fwd_status {
            out.push_str(&format!("; fwd-status={status}"));
        }
        if self.stored {
            out.push_str("; stored");
        }
        if self.collapsed {
            out.push_str("; collapsed");
        }
        if let Some(ttl) = self.ttl {
            // Structured-field integers have at most 15 digits.
            out.push_str(&format!(
                "; ttl={}",
                ttl.clamp(-999_999_999_999_999, 999_999_999_999_999)
            ));
        }
        if let Some(detail) = &self.detail {
            out.push_str("; detail=");
            out.push_str(&bare_item(detail));
        }
        out
    }

    /// This member appended to the `Cache-Status` a response already has (from caches nearer
    /// the origin), or alone.
    ///
    /// ```
    /// use lock_core::http::cache::CacheStatusHeader;
    ///
    /// let ours = CacheStatusHeader::hit();
    /// assert_eq!(ours.append_to(Some("origin-cache; hit"), "lc"), "origin-cache; hit, lc; hit");
    /// assert_eq!(ours.append_to(Some("  "), "lc"), "lc; hit");
    /// ```
    #[must_use]
    pub fn append_to(&self, existing: Option<&str>, name: &str) -> String {
        match existing.map(str::trim).filter(|e| !e.is_empty()) {
            Some(existing) => format!("{existing}, {}", self.header_value(name)),
            None => self.header_value(name),
        }
    }
}

/// `value` as an sf-token when it is one, else as an sf-string.
fn bare_item(value: &str) -> String {
    let bytes = value.as_bytes();
    let token = bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'*')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&b));
    if token {
        return value.to_owned();
    }
    let mut out = String::from("\"");
    for c in value.chars().filter(|c| (' '..='~').contains(c)) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The `Age` header value of a replay: `initial_age` (the response's age when stored, see
/// [`Store::initial_age`](super::Store::initial_age)) plus the time it has been stored, in
/// whole seconds, at most 2³¹ (RFC 9111 §5.1).
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::cache::age_value;
///
/// assert_eq!(age_value(Duration::from_secs(10), Duration::from_millis(2_900)), "12");
/// assert_eq!(age_value(Duration::MAX, Duration::MAX), "2147483648");
/// ```
#[must_use]
pub fn age_value(initial_age: Duration, stored_for: Duration) -> String {
    let age = initial_age.saturating_add(stored_for).as_secs();
    age.min(DELTA_SECONDS_CAP).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_table() {
        let rows: Vec<(CacheStatusHeader, &str, &str)> = vec![
            (CacheStatusHeader::hit(), "lock-core", "lock-core; hit"),
            (CacheStatusHeader::hit().ttl(-30), "lc", "lc; hit; ttl=-30"),
            (
                CacheStatusHeader::hit().ttl(i64::MIN),
                "lc",
                "lc; hit; ttl=-999999999999999",
            ),
            (
                CacheStatusHeader::forward(Forward::Method),
                "lc",
                "lc; fwd=method",
            ),
            (
                CacheStatusHeader::forward(Forward::Bypass).detail("no-store"),
                "lc",
                "lc; fwd=bypass; detail=no-store",
            ),
            (
                CacheStatusHeader::forward(Forward::Request).fwd_status(503),
                "lc",
                "lc; fwd=request; fwd-status=503",
            ),
            (
                CacheStatusHeader::forward(Forward::Stale)
                    .fwd_status(500)
                    .ttl(-5)
                    .detail("stale-if-error"),
                "lc",
                "lc; fwd=stale; fwd-status=500; ttl=-5; detail=stale-if-error",
            ),
            (
                CacheStatusHeader::forward(Forward::VaryMiss).stored(),
                "lc",
                "lc; fwd=vary-miss; stored",
            ),
            (
                CacheStatusHeader::forward(Forward::Partial),
                "lc",
                "lc; fwd=partial",
            ),
            (CacheStatusHeader::hit(), "Cache:1/a", "Cache:1/a; hit"),
            (CacheStatusHeader::hit(), "1cache", "\"1cache\"; hit"),
            (
                CacheStatusHeader::hit(),
                "a \"b\\c\"",
                r#""a \"b\\c\""; hit"#,
            ),
            (CacheStatusHeader::hit(), "", "\"\"; hit"),
            (
                CacheStatusHeader::hit().detail("two words"),
                "lc",
                "lc; hit; detail=\"two words\"",
            ),
            (
                CacheStatusHeader::hit().detail("é\n\0x"),
                "lc",
                "lc; hit; detail=\"x\"",
            ),
        ];
        for (status, name, expected) in rows {
            assert_eq!(status.header_value(name), expected, "{status:?}");
        }
    }

    #[test]
    fn every_value_is_printable_ascii() {
        for raw in crate::test_input::garbage(300) {
            let text = String::from_utf8_lossy(&raw);
            let value = CacheStatusHeader::forward(Forward::Miss)
                .detail(text.as_ref())
                .header_value(&text);
            assert!(
                value.bytes().all(|b| (0x20..0x7f).contains(&b)),
                "{value:?}"
            );
        }
    }

    #[test]
    fn outcomes() {
        for (outcome, expected) in [
            (CacheStatus::Hit, "c; hit"),
            (CacheStatus::Stale, "c; hit; detail=stale-while-revalidate"),
            (CacheStatus::Computed, "c; fwd=miss; stored"),
            (CacheStatus::Collapsed, "c; fwd=miss; collapsed"),
            (
                CacheStatus::StaleIfError,
                "c; fwd=stale; detail=stale-if-error",
            ),
            (CacheStatus::FailOpen, "c; fwd=miss; detail=fail-open"),
            (
                CacheStatus::WaitTimedOut,
                "c; fwd=miss; detail=wait-timed-out",
            ),
            (CacheStatus::PassThrough, "c; fwd=miss; detail=hit-for-pass"),
        ] {
            assert_eq!(
                CacheStatusHeader::from_outcome(outcome).header_value("c"),
                expected
            );
        }
    }

    #[test]
    fn ages() {
        assert_eq!(age_value(Duration::ZERO, Duration::from_millis(999)), "0");
        assert_eq!(
            age_value(Duration::from_secs(1 << 32), Duration::ZERO),
            "2147483648"
        );
    }
}
