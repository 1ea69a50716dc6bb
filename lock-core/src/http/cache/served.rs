//! What [`CacheCall::serve`](super::CacheCall::serve) tells an adapter to send.

use super::http_cache::append;
use super::{CacheRules, CacheStatusHeader, HeaderPairs, CACHE_STATUS};
use crate::cache::CacheStatus;
use crate::http::PlainResponse;

/// The answer to a request served through the cache.
///
/// `R` is the adapter's [`OriginResponse`](super::OriginResponse), `E` the error its
/// application may fail with. Not `#[non_exhaustive]`: an adapter must handle every way of
/// answering, and a new one should fail its build, not fall into a catch-all.
#[derive(Debug)]
#[must_use]
pub enum Served<R, E> {
    /// A response the cache makes: a stored response replayed (a hit, a stale hit, the
    /// response another request computed), or the cache's own `application/problem+json`
    /// (504 for `only-if-cached` on a miss, 503 when the backend is down and the cache fails
    /// closed, 500). Send it as it is.
    Answer(Answer),
    /// The application's own response to this request (it computed the response, or the
    /// response was not to be shared, or the request passed the cache by).
    Origin(FromOrigin<R>),
    /// The application failed; hand its error on as it is.
    Error(E),
}

/// A response the cache made: the [`PlainResponse`] to send, whether to send its body, and
/// what the cache did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// What to send: every header line, `cache-status` included (and `age` for a replay,
    /// `vary` with the rules' vary headers, see [`CacheRules::vary_value`]);
    /// for a `HEAD`, the `GET`'s body, not to be sent (see `head_only`).
    pub response: PlainResponse,
    /// The request was a `HEAD`: send the headers only; `content-length` is the body's
    /// length. (Servers that drop `HEAD` bodies themselves and take the length from the
    /// body, as actix-web does, may be handed the body.)
    pub head_only: bool,
    /// The cache primitive's outcome for a replayed response; `None` for the cache's own
    /// problem answers.
    pub outcome: Option<CacheStatus>,
}

impl Answer {
    /// Whether this is a stored response served without waiting for anything (`hit`, or a
    /// stale hit while a refresh runs). An adapter that cannot send it once the refresh that
    /// hit started took the request's call (lock-actix where no task can be spawned beside the
    /// request: it is consumed by calling the application) answers with the refreshed response
    /// instead, under
    /// [`HttpCache::refreshed_cache_status`](super::HttpCache::refreshed_cache_status).
    #[must_use]
    pub fn yields_to_refresh(&self) -> bool {
        matches!(self.outcome, Some(CacheStatus::Hit | CacheStatus::Stale))
    }

    /// A problem answer: generic words only, whatever went wrong (the details go to tracing).
    pub(super) fn problem(
        status: u16,
        kind: &str,
        title: &str,
        detail: &str,
        cache_status: String,
    ) -> Self {
        let mut response = PlainResponse::problem(
            status,
            &format!("urn:distributed-lock:{kind}"),
            title,
            detail,
            &[],
        )
        .with_header(CACHE_STATUS, cache_status);
        if status == 503 {
            response = response.with_header("retry-after", "1");
        }
        Self {
            response,
            head_only: false,
            outcome: None,
        }
    }

    /// The same answer with `Retry-After: secs` (a 503 says 1 s unless told when to retry).
    pub(super) fn retry_after(mut self, secs: u64) -> Self {
        self.response
            .headers
            .retain(|(name, _)| name != "retry-after");
        self.response = self.response.with_header("retry-after", secs.to_string());
        self
    }
}

/// The application's response, to send with the cache's `Cache-Status` member appended.
///
/// The body to send is `prefix` (what the cache already read), then what is left of the
/// response's body: nothing when `complete`, else the rest (or the error the body failed
/// with, which the adapter's response kept).
#[derive(Debug)]
#[non_exhaustive]
pub struct FromOrigin<R> {
    /// The response.
    pub response: R,
    /// The body bytes already read from it.
    pub prefix: Vec<u8>,
    /// Whether `prefix` is the whole body (it was read to the end).
    pub complete: bool,
    /// The request was a `HEAD` forwarded as a `GET` (to store the body): send the headers
    /// only, with `content-length: prefix.len()` when `complete` and the response has none.
    /// (Servers that drop `HEAD` bodies themselves and take the length from the body, as
    /// actix-web does, may be handed the body.)
    pub head_only: bool,
    pub(super) member: String,
    vary: Option<String>,
}

impl<R: HeaderPairs> FromOrigin<R> {
    pub(super) fn new(response: R, header: CacheStatusHeader, rules: &CacheRules) -> Self {
        Self {
            vary: rules.vary_value(&response),
            response,
            prefix: Vec::new(),
            complete: false,
            head_only: false,
            member: header.header_value(rules.cache_name()),
        }
    }
}

impl<R> FromOrigin<R> {
    /// The `Vary` to send, replacing the response's own lines: their members followed by the
    /// rules' vary headers they lack ([`CacheRules::vary_value`]); `None`: send them as they
    /// are.
    #[must_use]
    pub fn vary_value(&self) -> Option<&str> {
        self.vary.as_deref()
    }

    /// The `Cache-Status` to send: `existing` (the response's own, every line joined with
    /// `", "`) followed by this cache's member.
    #[must_use]
    pub fn cache_status_value(&self, existing: Option<&str>) -> String {
        append(existing, &self.member)
    }

    /// This cache's `Cache-Status` member alone.
    #[must_use]
    pub fn cache_status_member(&self) -> &str {
        &self.member
    }
}
