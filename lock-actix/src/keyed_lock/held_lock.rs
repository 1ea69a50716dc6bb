//! [`HeldLock`]: the extractor for the lock a handler runs under.

use std::future::Ready;
use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use lock_core::http::keyed::LockInfo;

use crate::extensions::from_extensions;

/// The key and fencing token of the lock the [`KeyedLock`](crate::KeyedLock) middleware took
/// for this request. Extracting it in a handler that is not behind the middleware fails with
/// a 500 `application/problem+json` naming the missing middleware (a wiring mistake, not a
/// client error); take an `Option<HeldLock>` where a request may pass the middleware unlocked
/// (methods it does not select).
///
/// ```
/// use lock_actix::HeldLock;
///
/// async fn write(lock: HeldLock) -> String {
///     // Hand the token to the resource so a stale holder's writes are refused.
///     format!("UPDATE stock SET fence = {0} WHERE fence <= {0}", lock.fencing_token)
/// }
/// # let _ = write;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldLock(pub LockInfo);

impl FromRequest for HeldLock {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        from_extensions(
            request,
            HeldLock,
            "HeldLock used in a handler that is not wrapped in KeyedLock",
        )
    }
}

impl Deref for HeldLock {
    type Target = LockInfo;

    fn deref(&self) -> &LockInfo {
        &self.0
    }
}
