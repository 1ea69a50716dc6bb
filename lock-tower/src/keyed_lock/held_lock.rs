//! [`HeldLock`]: the axum extractor for the lock a handler runs under.

use std::convert::Infallible;
use std::ops::Deref;

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::response::Response;
use http::request::Parts;
use lock_core::http::keyed::LockInfo;

use crate::extensions::{from_extensions, missing_layer};

/// The key and fencing token of the lock the [`KeyedLockLayer`](crate::KeyedLockLayer) took
/// for this request (the same as `Extension<LockInfo>`). Extracting it in a handler that is
/// not behind the layer fails with a 500 `application/problem+json` naming the missing layer
/// (a wiring mistake, not a client error); take an `Option<HeldLock>` where a request may
/// pass the layer unlocked (methods it does not select). Needs the `axum` feature.
///
/// ```
/// use lock_tower::HeldLock;
///
/// async fn write(lock: HeldLock) -> String {
///     // Hand the token to the resource so a stale holder's writes are refused.
///     format!("UPDATE stock SET fence = {0} WHERE fence <= {0}", lock.fencing_token)
/// }
/// # let _ = write;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldLock(pub LockInfo);

impl<S: Send + Sync> FromRequestParts<S> for HeldLock {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Response> {
        from_extensions(parts, HeldLock).ok_or_else(|| {
            missing_layer("HeldLock used in a handler that is not behind KeyedLockLayer")
        })
    }
}

impl<S: Send + Sync> OptionalFromRequestParts<S> for HeldLock {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Option<Self>, Infallible> {
        Ok(from_extensions(parts, HeldLock))
    }
}

impl Deref for HeldLock {
    type Target = LockInfo;

    fn deref(&self) -> &LockInfo {
        &self.0
    }
}
