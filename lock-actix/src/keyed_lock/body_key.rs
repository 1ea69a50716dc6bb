//! [`BodyKey`]: a lock key found in the request body.

use std::fmt;

use actix_web::body::{self, BodyStream};
use actix_web::dev::{Payload, ServiceRequest};
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest};
use lock_core::http::keyed::BodyLimit;
use lock_core::http::Rejection;

use crate::KeyExtractor;

/// Takes the lock key from the request body: the [`KeyedLock`](crate::KeyedLock) middleware
/// reads the payload up to a byte limit, asks a closure `Fn(&HttpRequest, &[u8]) ->
/// Option<String>` for the key, and puts the same bytes back as the payload, so the handler's
/// `web::Json`, `web::Bytes` or `String` reads it unchanged. A body over the limit (by
/// `Content-Length` or by count) answers 413, a body that breaks off 400, a body without a
/// key 400; the decisions are lock-core's [`BodyLimit`].
///
/// ```
/// use actix_web::{web, App, HttpRequest};
/// use lock_actix::{BodyKey, KeyedLock, LockClient, HeldLock};
/// use lock_core::MemoryBackend;
///
/// /// `{"order_id": "o-1", ...}` locks on `o-1`.
/// fn order_id(_: &HttpRequest, body: &[u8]) -> Option<String> {
///     let json: serde_json::Value = serde_json::from_slice(body).ok()?;
///     Some(json.get("order_id")?.as_str()?.to_owned())
/// }
///
/// async fn pay(lock: HeldLock, body: web::Bytes) -> String {
///     format!("{} bytes under {}", body.len(), lock.key)
/// }
///
/// let lock = KeyedLock::new(LockClient::new(MemoryBackend::new()), BodyKey::new(16 * 1024, order_id));
/// let app = App::new().service(web::resource("/pay").wrap(lock).route(web::post().to(pay)));
/// # let _ = app;
/// ```
pub struct BodyKey<F> {
    limit: BodyLimit,
    key: F,
}

impl<F> BodyKey<F> {
    /// Reads at most `max_bytes` bytes of the body and finds the key in them with `key`.
    ///
    /// ```
    /// let by_body = lock_actix::BodyKey::new(1024, |_: &actix_web::HttpRequest, body: &[u8]| {
    ///     std::str::from_utf8(body).ok().map(str::to_owned)
    /// });
    /// # let _ = by_body;
    /// ```
    pub fn new(max_bytes: usize, key: F) -> Self {
        Self {
            limit: BodyLimit::new(max_bytes),
            key,
        }
    }
}

impl<F> fmt::Debug for BodyKey<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyKey")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<F> KeyExtractor for BodyKey<F>
where
    F: Fn(&HttpRequest, &[u8]) -> Option<String> + 'static,
{
    /// No key without the body, which [`key`](Self::key) reads.
    fn extract(&self, _request: &ServiceRequest) -> Option<String> {
        None
    }

    fn describe(&self) -> String {
        BodyLimit::DESCRIBE.to_owned()
    }

    /// Reads the payload (over the limit: 413), finds the key in it, and puts the same bytes
    /// back for the handler.
    async fn key(&self, request: &mut ServiceRequest) -> Result<String, Rejection> {
        let body = read_body(request, self.limit).await?;
        let key = (self.key)(request.request(), &body);
        // The handler reads the same bytes.
        request.set_payload(Payload::from(body));
        key.ok_or_else(BodyLimit::missing_key)
    }
}

/// The payload, read whole unless it is (or says it is) over `limit`.
async fn read_body(request: &mut ServiceRequest, limit: BodyLimit) -> Result<Bytes, Rejection> {
    let declared = request.headers().get(CONTENT_LENGTH).map(|v| v.as_bytes());
    if limit.refuses_declared(declared) {
        return Err(limit.too_large());
    }
    let payload = BodyStream::new(request.take_payload());
    match body::to_bytes_limited(payload, limit.max_bytes()).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(_)) => Err(BodyLimit::unreadable()),
        Err(_exceeded) => Err(limit.too_large()),
    }
}
