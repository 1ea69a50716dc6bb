//! `Cache-Control` (RFC 9111 §5.2, with RFC 5861's stale windows) and the request's
//! `Pragma: no-cache` (RFC 9111 §5.4), parsed without ever failing: a directive the cache does
//! not know is ignored, and a known directive with a bad value is kept as
//! [`DeltaSeconds::Invalid`] so the decisions can treat it safely.

use super::headers::{is_token, lines, HeaderPairs};

/// The largest delta-seconds value kept: RFC 9111 §1.2.2 has a recipient read anything
/// larger (or anything that overflows) as 2³¹.
pub const DELTA_SECONDS_CAP: u64 = 1 << 31;

/// The value of a directive that takes a number of seconds (`max-age=60`).
///
/// ```
/// use lock_core::http::cache::{CacheControl, DeltaSeconds};
///
/// let cc = CacheControl::parse(["max-age=\"60\", s-maxage=soon"]);
/// assert_eq!(cc.max_age, DeltaSeconds::Seconds(60));
/// assert_eq!(cc.s_maxage, DeltaSeconds::Invalid);
/// assert_eq!(cc.stale_if_error, DeltaSeconds::Absent);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeltaSeconds {
    /// The directive was not sent.
    #[default]
    Absent,
    /// A valid value (token or quoted-string form), at most [`DELTA_SECONDS_CAP`].
    Seconds(u64),
    /// The directive was sent without a value, with a value that is not a whole number of
    /// seconds (`-1`, `1.5`, `""`), or more than once with different values.
    Invalid,
}

impl DeltaSeconds {
    /// The seconds, when the directive was sent with a valid value.
    #[must_use]
    pub const fn seconds(self) -> Option<u64> {
        match self {
            Self::Seconds(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the directive was sent at all, valid or not.
    #[must_use]
    pub const fn is_present(self) -> bool {
        !matches!(self, Self::Absent)
    }

    /// A repeated directive: the same value twice is that value; two different values make
    /// the directive invalid (RFC 9111 §4.2.1 offers "the first" or "stale"; stale is the
    /// side that never serves something the origin may not have meant).
    fn merge(self, next: Self) -> Self {
        match (self, next) {
            (Self::Absent, next) => next,
            (Self::Seconds(a), Self::Seconds(b)) if a == b => self,
            _ => Self::Invalid,
        }
    }
}

/// The `Cache-Control` directives of one message, over all its `Cache-Control` lines.
///
/// Names are case-insensitive, values may be tokens or quoted strings, members are separated
/// by commas (empty members and surrounding whitespace are ignored, and so is whitespace
/// around `=`). Directives that restrict (`no-store`, `no-cache`, `private`,
/// `must-revalidate`, `proxy-revalidate`, `only-if-cached`) count even when sent with an
/// argument (`no-cache="Set-Cookie"`, `private="x"`: RFC 9111 lets a cache treat the
/// qualified forms as unqualified); `public` with an argument is malformed and grants nothing.
///
/// ```
/// use lock_core::http::cache::{CacheControl, DeltaSeconds};
///
/// let cc = CacheControl::parse(["Public, MAX-AGE=60", "stale-while-revalidate=30"]);
/// assert!(cc.public && !cc.no_store);
/// assert_eq!(cc.max_age.seconds(), Some(60));
/// assert_eq!(cc.stale_while_revalidate.seconds(), Some(30));
/// assert_eq!(CacheControl::parse(["max-age=99999999999999999999"]).max_age.seconds(), Some(1 << 31));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheControl {
    /// `no-store`: nothing of this exchange may be stored.
    pub no_store: bool,
    /// `no-cache`: a stored response may not be used without validating it first.
    pub no_cache: bool,
    /// `private` (response): only a private cache may store it.
    pub private: bool,
    /// `public` (response): a shared cache may store it, even for a request with
    /// `Authorization`.
    pub public: bool,
    /// `must-revalidate` (response): once stale it may not be served without validation.
    pub must_revalidate: bool,
    /// `proxy-revalidate` (response): `must-revalidate` for shared caches.
    pub proxy_revalidate: bool,
    /// `only-if-cached` (request): answer from the cache or with 504, never forward.
    pub only_if_cached: bool,
    /// `max-age`: freshness lifetime (response), or the oldest response accepted (request).
    pub max_age: DeltaSeconds,
    /// `s-maxage` (response): freshness lifetime in shared caches, over `max-age`.
    pub s_maxage: DeltaSeconds,
    /// `stale-while-revalidate` (RFC 5861, response).
    pub stale_while_revalidate: DeltaSeconds,
    /// `stale-if-error` (RFC 5861, response).
    pub stale_if_error: DeltaSeconds,
}

impl CacheControl {
    /// Parses the raw values of every `Cache-Control` line of a message, in order.
    #[must_use]
    pub fn parse<L: AsRef<[u8]>>(lines: impl IntoIterator<Item = L>) -> Self {
        let mut cc = Self::default();
        for line in lines {
            for member in members(line.as_ref()) {
                cc.apply(member);
            }
        }
        cc
    }

    /// The directives of a message's headers (every `Cache-Control` line).
    ///
    /// ```
    /// use lock_core::http::cache::CacheControl;
    ///
    /// let headers = [("cache-control", "no-cache"), ("Cache-Control", "max-age=5")];
    /// let cc = CacheControl::of(&headers);
    /// assert!(cc.no_cache);
    /// assert_eq!(cc.max_age.seconds(), Some(5));
    /// ```
    #[must_use]
    pub fn of(headers: &(impl HeaderPairs + ?Sized)) -> Self {
        Self::parse(lines(headers, "cache-control"))
    }

    fn apply(&mut self, member: &[u8]) {
        let (name, arg) = match member.iter().position(|&b| b == b'=') {
            Some(eq) => (member[..eq].trim_ascii(), Some(argument(&member[eq + 1..]))),
            None => (member, None),
        };
        if !is_token(name) {
            return;
        }
        let delta = || match &arg {
            Some(Ok(value)) => delta_seconds(value),
            _ => DeltaSeconds::Invalid,
        };
        match name.to_ascii_lowercase().as_slice() {
            b"no-store" => self.no_store = true,
            b"no-cache" => self.no_cache = true,
            b"private" => self.private = true,
            b"must-revalidate" => self.must_revalidate = true,
            b"proxy-revalidate" => self.proxy_revalidate = true,
            b"only-if-cached" => self.only_if_cached = true,
            b"public" => self.public |= arg.is_none(),
            b"max-age" => self.max_age = self.max_age.merge(delta()),
            b"s-maxage" => self.s_maxage = self.s_maxage.merge(delta()),
            b"stale-while-revalidate" => {
                self.stale_while_revalidate = self.stale_while_revalidate.merge(delta());
            }
            b"stale-if-error" => self.stale_if_error = self.stale_if_error.merge(delta()),
            _ => {}
        }
    }
}

/// Whether a request's `Pragma` lines hold `no-cache`. RFC 9111 §5.4 has a cache ignore
/// `Pragma` when the request also sends `Cache-Control`; the caller checks that.
///
/// ```
/// use lock_core::http::cache::pragma_no_cache;
///
/// assert!(pragma_no_cache(["x, NO-CACHE"]));
/// assert!(!pragma_no_cache(["no-cache=1", "nocache"]));
/// ```
#[must_use]
pub fn pragma_no_cache<L: AsRef<[u8]>>(lines: impl IntoIterator<Item = L>) -> bool {
    lines.into_iter().any(|line| {
        members(line.as_ref())
            .into_iter()
            .any(|m| m.eq_ignore_ascii_case(b"no-cache"))
    })
}

/// The members of one list line: split at commas outside quoted strings, trimmed, empty ones
/// dropped. An unterminated quote runs to the end of the line.
fn members(line: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, &b) in line.iter().enumerate() {
        match (quoted, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, _, b'"') => quoted = !quoted,
            (false, _, b',') => {
                out.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&line[start..]);
    out.into_iter()
        .map(<[u8]>::trim_ascii)
        .filter(|m| !m.is_empty())
        .collect()
}

/// A directive's argument: a token or a quoted string (unescaped); `Err` when it is neither
/// (empty, an unterminated quote, text after the closing quote, bytes a token cannot hold).
fn argument(raw: &[u8]) -> Result<Vec<u8>, ()> {
    let raw = raw.trim_ascii();
    let Some(inner) = raw.strip_prefix(b"\"") else {
        return is_token(raw).then(|| raw.to_vec()).ok_or(());
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => out.push(*bytes.next().ok_or(())?),
            b'"' => return bytes.as_slice().is_empty().then_some(out).ok_or(()),
            _ => out.push(b),
        }
    }
    Err(())
}

/// `delta-seconds = 1*DIGIT`, saturating at [`DELTA_SECONDS_CAP`].
fn delta_seconds(value: &[u8]) -> DeltaSeconds {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return DeltaSeconds::Invalid;
    }
    let seconds = value.iter().fold(0u64, |acc, d| {
        (acc * 10 + u64::from(d - b'0')).min(DELTA_SECONDS_CAP)
    });
    DeltaSeconds::Seconds(seconds)
}

#[cfg(test)]
mod tests;
