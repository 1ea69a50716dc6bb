//! [`LockRejection`] and [`error_response`]: a `LockError` answered as the keyed-lock layer
//! answers it.

use std::fmt;

use http::Response;
use lock_core::http::keyed::KeyedLockOptions;
use lock_core::http::Rejection;
use lock_core::LockError;

use crate::response::from_plain;

/// A lock failure as the `application/problem+json` response [`KeyedLockLayer`] gives
/// (busy → 409 with `Retry-After`, unavailable or lost → 503 with a generic body, …), for
/// handlers that take locks themselves. Converts into any `http::Response<B>` whose body is
/// buildable from a `String` (axum's `Response`, so an axum handler may return
/// `Result<_, axum::response::Response>`).
///
/// ```
/// use axum::response::Response;
/// use lock_core::LockClient;
/// use lock_tower::LockRejection;
///
/// async fn restock(locks: LockClient) -> Result<&'static str, Response> {
///     let lock = locks.lock("stock").await.map_err(|e| LockRejection::from(e).into_response())?;
///     lock.release().await.map_err(|e| LockRejection::from(e).into_response())?;
///     Ok("restocked")
/// }
/// # let _ = restock;
///
/// let down = lock_core::LockError::unavailable("redis", "connection refused");
/// let response: http::Response<String> = LockRejection::from(down).into();
/// assert_eq!(response.status(), 503);
/// assert_eq!(response.headers()["content-type"], "application/problem+json");
/// assert!(!response.body().contains("refused"));
/// ```
///
/// [`KeyedLockLayer`]: crate::KeyedLockLayer
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRejection(Rejection);

impl LockRejection {
    /// The response (its `application/problem+json` body is UTF-8 text).
    #[must_use]
    pub fn into_response<B: From<String>>(self) -> Response<B> {
        from_plain(self.0.response).map(|body| B::from(String::from_utf8_lossy(&body).into_owned()))
    }

    /// Why, and the response as lock-core made it.
    #[must_use]
    pub fn rejection(&self) -> &Rejection {
        &self.0
    }

    /// Wraps a rejection made by lock-core.
    #[must_use]
    pub fn new(rejection: Rejection) -> Self {
        Self(rejection)
    }

    /// The answer for `error` under `options` (its `Retry-After`, busy status and
    /// `expose_errors`); [`From<LockError>`](#impl-From<LockError>-for-LockRejection) uses the
    /// default options.
    #[must_use]
    pub fn from_error(error: &LockError, options: &KeyedLockOptions) -> Self {
        Self(Rejection::from_error(error, options))
    }
}

impl<B: From<String>> From<LockRejection> for Response<B> {
    fn from(rejection: LockRejection) -> Self {
        rejection.into_response()
    }
}

impl From<LockError> for LockRejection {
    fn from(error: LockError) -> Self {
        Self::from_error(&error, &KeyedLockOptions::default())
    }
}

impl From<Rejection> for LockRejection {
    fn from(rejection: Rejection) -> Self {
        Self(rejection)
    }
}

/// lock-core's [`Rejection`] display: why, and the status.
impl fmt::Display for LockRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for LockRejection {}

/// The response the keyed-lock layer gives for `error`, with the default options (generic
/// 5xx bodies, `Retry-After: 1`, 409 when busy).
///
/// ```
/// let busy = lock_core::LockError::Busy { key: "sku:1".into(), waited: std::time::Duration::ZERO };
/// let response: http::Response<String> = lock_tower::error_response(&busy);
/// assert_eq!(response.status(), 409);
/// ```
#[must_use]
pub fn error_response<B: From<String>>(error: &LockError) -> Response<B> {
    LockRejection::from_error(error, &KeyedLockOptions::default()).into_response()
}
