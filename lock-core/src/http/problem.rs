//! What the middleware answers instead of running the handler: status, headers and an
//! RFC 9457 `application/problem+json` body.

use std::time::Duration;

use super::keyed::KeyedLockOptions;
use super::PlainResponse;
use crate::json_text::json_string;
use crate::LockError;

/// The content type of every rejection body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Why a request was not run under its lock.
///
/// ```
/// use lock_core::http::keyed::KeyedLockOptions;
/// use lock_core::http::{Rejection, RejectionKind};
///
/// let busy = Rejection::busy("sku:1", std::time::Duration::ZERO, &KeyedLockOptions::new());
/// assert_eq!(busy.kind, RejectionKind::Busy);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionKind {
    /// Another request held the key for the whole wait: 409 or 429.
    Busy,
    /// The lock backend could not be reached or timed out: 503 (fail closed).
    Unavailable,
    /// The lease was lost while the handler ran; the handler was cancelled: 503.
    Lost,
    /// The request carries no usable key: 400.
    BadKey,
    /// A value from the request (a duration, a quantity, an order id) is outside what the
    /// operation accepts: 400.
    BadInput,
    /// The middleware is misconfigured or the backend misbehaved: 500.
    Internal,
    /// Another request with the same idempotency key is still running: 409.
    InFlight,
    /// The idempotency key was used with another request (method, path, body): 422.
    KeyReused,
    /// The request body is larger than the middleware keeps: 413.
    TooLarge,
    /// The request has no principal to keep its idempotency key under: 401 (or the
    /// status the middleware was given).
    Unscoped,
}

impl RejectionKind {
    /// A short name for logs and metric labels (`busy`, `unavailable`, `lost`, `bad_key`, …).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
            Self::Lost => "lost",
            Self::BadKey => "bad_key",
            Self::BadInput => "bad_input",
            Self::Internal => "internal",
            Self::InFlight => "in_flight",
            Self::KeyReused => "key_reused",
            Self::TooLarge => "too_large",
            Self::Unscoped => "unscoped",
        }
    }

    /// The problem `type` URI of this kind.
    #[must_use]
    pub const fn type_uri(self) -> &'static str {
        match self {
            Self::Busy => "urn:distributed-lock:busy",
            Self::Unavailable => "urn:distributed-lock:unavailable",
            Self::Lost => "urn:distributed-lock:lease-lost",
            Self::BadKey => "urn:distributed-lock:bad-key",
            Self::BadInput => "urn:distributed-lock:bad-input",
            Self::Internal => "urn:distributed-lock:internal",
            Self::InFlight => "urn:distributed-lock:idempotency:in-flight",
            Self::KeyReused => "urn:distributed-lock:idempotency:key-reused",
            Self::TooLarge => "urn:distributed-lock:too-large",
            Self::Unscoped => "urn:distributed-lock:idempotency:unscoped",
        }
    }
}

/// A response the middleware produces itself instead of running the handler: why
/// ([`kind`](Self::kind)) and the [`PlainResponse`] to send (its `application/problem+json`
/// body, and `Retry-After` for busy and unavailable answers), which adapters copy into their
/// framework's response type, so an `Infallible` service stays `Infallible`.
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::keyed::{BusyStatus, KeyedLockOptions};
/// use lock_core::http::{Rejection, PROBLEM_JSON};
///
/// let options = KeyedLockOptions::new().busy_status(BusyStatus::TooManyRequests);
/// let busy = Rejection::busy("sku:1", Duration::from_millis(20), &options);
/// assert_eq!(busy.response.status, 429);
/// assert_eq!(
///     busy.response.headers,
///     vec![
///         ("content-type".to_owned(), PROBLEM_JSON.as_bytes().to_vec()),
///         ("retry-after".to_owned(), b"1".to_vec()),
///     ]
/// );
/// assert_eq!(busy.retry_after(), Some(1));
/// assert!(String::from_utf8(busy.response.body).unwrap().contains(r#""status":429"#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejection {
    /// Why.
    pub kind: RejectionKind,
    /// What to send.
    pub response: PlainResponse,
}

/// `lock rejection (Busy, 409)`: why, and the status sent (the body stays out of logs), as
/// both adapters' `LockRejection` display it.
///
/// ```
/// use lock_core::http::Rejection;
///
/// assert_eq!(Rejection::missing_key("header `x-sku`").to_string(), "lock rejection (BadKey, 400)");
/// ```
impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lock rejection ({:?}, {})",
            self.kind, self.response.status
        )
    }
}

impl Rejection {
    pub(crate) fn new(
        kind: RejectionKind,
        status: u16,
        retry_after: Option<u64>,
        title: &str,
        detail: &str,
        key: Option<&str>,
    ) -> Self {
        let mut extra = Vec::new();
        if let Some(key) = key {
            extra.push(("key", key));
        }
        let mut response = PlainResponse::problem(status, kind.type_uri(), title, detail, &extra);
        if let Some(secs) = retry_after {
            response = response.with_header("retry-after", secs.to_string());
        }
        Self { kind, response }
    }

    /// The `Retry-After` sent, in seconds (busy and unavailable answers say when to retry).
    #[must_use]
    pub fn retry_after(&self) -> Option<u64> {
        let value = self.response.header("retry-after")?;
        std::str::from_utf8(value).ok()?.parse().ok()
    }

    /// The answer for a key that stayed busy for `waited`.
    pub fn busy(key: &str, waited: Duration, options: &KeyedLockOptions) -> Self {
        Self::new(
            RejectionKind::Busy,
            options.busy_status.code(),
            Some(options.retry_after_secs()),
            "Resource busy",
            &format!(
                "another request holds the lock (waited {} ms)",
                waited.as_millis()
            ),
            Some(key),
        )
    }

    /// The answer for a request whose key could not be extracted from `source`
    /// (a [`KeySource::describe`](super::keyed::KeySource::describe) text). The keyed-lock
    /// middleware answers with it, so it is counted in
    /// [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL) here.
    pub fn missing_key(source: &str) -> Self {
        let rejection = Self::new(
            RejectionKind::BadKey,
            400,
            None,
            "Missing lock key",
            &format!("the request has no usable {source}"),
            None,
        );
        rejection.record_keyed_lock();
        rejection
    }

    /// [`missing_key`](Self::missing_key) with the reason the key could not be found.
    pub(crate) fn missing_key_because(source: &str, why: &str) -> Self {
        let rejection = Self::new(
            RejectionKind::BadKey,
            400,
            None,
            "Missing lock key",
            &format!("the request has no usable {source}: {why}"),
            None,
        );
        rejection.record_keyed_lock();
        rejection
    }

    /// The answer of an extractor whose middleware is not on the route (a handler wired
    /// wrong, not a client error): 500 with a `detail` naming what is missing.
    ///
    /// ```
    /// use lock_core::http::{Rejection, RejectionKind};
    ///
    /// let answer = Rejection::missing_layer("HeldLock used on a route without KeyedLockLayer");
    /// assert_eq!((answer.response.status, answer.kind), (500, RejectionKind::Internal));
    /// assert!(String::from_utf8(answer.response.body).unwrap().contains("without KeyedLockLayer"));
    /// ```
    pub fn missing_layer(detail: &str) -> Self {
        Self::new(
            RejectionKind::Internal,
            500,
            None,
            "Middleware missing",
            detail,
            None,
        )
    }

    /// The answer to a request whose body could not be read (the connection failed, a bad
    /// chunked encoding): 400, nothing runs. Each layer counts it as its own answer.
    ///
    /// ```
    /// use lock_core::http::{Rejection, RejectionKind};
    ///
    /// assert_eq!(Rejection::unreadable_body().kind, RejectionKind::BadInput);
    /// ```
    #[must_use]
    pub fn unreadable_body() -> Self {
        Self::new(
            RejectionKind::BadInput,
            400,
            None,
            "Unreadable request body",
            "the request body could not be read",
            None,
        )
    }

    /// Counts this rejection as an answer of the keyed-lock middleware.
    pub(crate) fn record_keyed_lock(&self) {
        crate::http::metrics::http_response(
            crate::http::metrics::LAYER_KEYED_LOCK,
            Some(self.response.status),
            self.kind.as_str(),
        );
    }

    /// The answer for a lock error: unavailable/timeout and lost → 503, bad key → 400,
    /// busy → the busy status, anything else → 500 (fail closed in every case). A 503 whose
    /// backend is known to be down (refused by its [breaker](crate::breaker)) says when the
    /// breaker's probe is due in `Retry-After`; other 503s say
    /// [`KeyedLockOptions::retry_after`].
    ///
    /// 5xx bodies are generic unless [`KeyedLockOptions::expose_errors`] is on: no backend
    /// address, no OS error text, no lock key; the error itself is logged (`tracing`: warn, or
    /// debug for an unreachable backend, whose breaker reports the outage once).
    ///
    /// ```
    /// use lock_core::http::keyed::KeyedLockOptions;
    /// use lock_core::http::Rejection;
    /// use lock_core::LockError;
    ///
    /// let down = LockError::unavailable("redis", "connection refused (127.0.0.1:6379)");
    /// let generic = Rejection::from_error(&down, &KeyedLockOptions::new());
    /// let body = String::from_utf8(generic.response.body).unwrap();
    /// assert_eq!(generic.response.status, 503);
    /// assert!(!body.contains("redis") && !body.contains("refused") && !body.contains("127.0.0.1"));
    /// let detailed = Rejection::from_error(&down, &KeyedLockOptions::new().expose_errors(true));
    /// assert!(String::from_utf8(detailed.response.body).unwrap().contains("127.0.0.1:6379"));
    /// ```
    pub fn from_error(error: &LockError, options: &KeyedLockOptions) -> Self {
        let retry = Some(options.retry_after_secs());
        let server_error = |kind, status, retry, title, generic: &str, key: Option<&str>| {
            if options.expose_errors {
                Self::new(kind, status, retry, title, &error.with_causes(), key)
            } else {
                if error.is_unavailable() {
                    tracing::debug!(error = %error.with_causes(), status, "lock error answered with a generic problem body");
                } else {
                    tracing::warn!(error = %error.with_causes(), status, "lock error answered with a generic problem body");
                }
                Self::new(kind, status, retry, title, generic, None)
            }
        };
        match error {
            LockError::Busy { key, waited } => Self::busy(key, *waited, options),
            LockError::InvalidKey { key, .. } => Self::new(
                RejectionKind::BadKey,
                400,
                None,
                "Invalid lock key",
                &error.to_string(),
                Some(key),
            ),
            LockError::InvalidDuration { .. } | LockError::InvalidInput { .. } => Self::new(
                RejectionKind::BadInput,
                400,
                None,
                "Invalid input",
                &error.to_string(),
                None,
            ),
            LockError::LeaseLost { key, .. } => server_error(
                RejectionKind::Lost,
                503,
                retry,
                "Lock lost",
                "the lock was lost while the request ran; try again",
                Some(key),
            ),
            e if e.is_unavailable() => server_error(
                RejectionKind::Unavailable,
                503,
                e.circuit_open()
                    .map(crate::breaker::CircuitOpen::retry_after_secs)
                    .or(retry),
                "Lock service unavailable",
                "the lock service could not be reached; try again later",
                None,
            ),
            _ => server_error(
                RejectionKind::Internal,
                500,
                None,
                "Lock error",
                "the lock could not be taken because of an internal error",
                None,
            ),
        }
    }
}

/// An `application/problem+json` body (RFC 9457) with `type`, `title`, `status`, `detail` and
/// extra string members; for applications that answer in the same style.
///
/// ```
/// use lock_core::http::problem_body;
///
/// let body = problem_body("urn:shop:out-of-stock", "Out of stock", 409, "0 \"left\"", &[("sku", "a")]);
/// assert_eq!(
///     String::from_utf8(body).unwrap(),
///     r#"{"type":"urn:shop:out-of-stock","title":"Out of stock","status":409,"detail":"0 \"left\"","sku":"a"}"#
/// );
/// ```
#[must_use]
pub fn problem_body(
    type_uri: &str,
    title: &str,
    status: u16,
    detail: &str,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut out = format!(
        "{{\"type\":{},\"title\":{},\"status\":{status},\"detail\":{}",
        json_string(type_uri),
        json_string(title),
        json_string(detail)
    );
    for (name, value) in extra {
        out.push_str(&format!(",{}:{}", json_string(name), json_string(value)));
    }
    out.push('}');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_statuses() {
        let options = KeyedLockOptions::new().retry_after(Duration::from_secs(4));
        let down = Rejection::from_error(&LockError::unavailable("redis", "refused"), &options);
        assert_eq!((down.response.status, down.retry_after()), (503, Some(4)));
        let generic = String::from_utf8(down.response.body.clone()).unwrap();
        assert!(
            !generic.contains("redis") && !generic.contains("refused"),
            "{generic}"
        );
        assert_eq!(down.kind, RejectionKind::Unavailable);
        let lost = LockError::LeaseLost {
            key: "k".into(),
            reason: crate::LostReason::NotOwner,
        };
        let lost_answer = Rejection::from_error(&lost, &options);
        assert_eq!(lost_answer.response.status, 503);
        assert!(!String::from_utf8(lost_answer.response.body)
            .unwrap()
            .contains("\"k\""));
        let exposed = Rejection::from_error(&lost, &options.clone().expose_errors(true));
        assert!(String::from_utf8(exposed.response.body)
            .unwrap()
            .contains(r#""key":"k""#));
        let bad = LockError::InvalidKey {
            key: String::new(),
            reason: "empty".into(),
        };
        assert_eq!(Rejection::from_error(&bad, &options).response.status, 400);
        let input = LockError::InvalidInput {
            what: "order id",
            reason: "too long".into(),
        };
        let refused = Rejection::from_error(&input, &options);
        assert_eq!(
            (refused.response.status, refused.kind),
            (400, RejectionKind::BadInput)
        );
        let config = LockError::InvalidConfig("x".into());
        let internal = Rejection::from_error(&config, &options);
        assert_eq!(
            (internal.response.status, internal.retry_after()),
            (500, None)
        );
    }
}
