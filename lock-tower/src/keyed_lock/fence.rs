//! [`LockFence`]: the axum extractor for the lock a handler runs under.

use std::ops::Deref;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use lock_core::http::keyed::LockInfo;
use lock_core::http::Rejection;

use crate::LockRejection;

/// The key and fencing token of the lock the [`KeyedLockLayer`](crate::KeyedLockLayer) took
/// for this request (the same as `Extension<LockInfo>`). Extracting it in a handler that is
/// not behind the layer fails with a 500 `application/problem+json` (a wiring mistake, not a
/// client error). Needs the `axum` feature.
///
/// ```
/// use lock_tower::LockFence;
///
/// async fn write(lock: LockFence) -> String {
///     // Hand the token to the resource so a stale holder's writes are refused.
///     format!("UPDATE stock SET fence = {0} WHERE fence <= {0}", lock.fence)
/// }
/// # let _ = write;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockFence(pub LockInfo);

impl Deref for LockFence {
    type Target = LockInfo;

    fn deref(&self) -> &LockInfo {
        &self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for LockFence {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Response> {
        match parts.extensions.get::<LockInfo>() {
            Some(info) => Ok(Self(info.clone())),
            None => Err(LockRejection::new(Rejection::missing_layer(
                "LockFence used in a handler that is not behind KeyedLockLayer",
            ))
            .into_response::<axum::body::Body>()
            .into_response()),
        }
    }
}
