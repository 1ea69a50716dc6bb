//! [`BodyKey`]: a lock key found in the request body; [`AsyncKey`]: a key from any async
//! closure.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::Request;
use http_body::Body;
use lock_core::http::keyed::BodyLimit;
use lock_core::http::Rejection;

use crate::read::{read, Read};
use crate::{KeyExtractor, KeyFound};

/// Takes the lock key from the request body: reads it up to a byte limit, asks a closure
/// `Fn(&Parts, &[u8]) -> Option<String>` for the key, and gives the handler the same bytes
/// as its body (trailers are not kept). A body over the limit (by `Content-Length` or by
/// count) answers 413, a body that breaks off 400, a body without a key 400; the decisions
/// are lock-core's [`BodyLimit`].
///
/// The request body type must be rebuildable from the bytes read (`From<Bytes>`, frames of
/// `Bytes`), as axum's `Body` is.
///
/// ```
/// use axum::{body::Bytes, routing::post, Extension, Router};
/// use lock_core::MemoryBackend;
/// use lock_tower::{BodyKey, KeyedLockLayer, LockClient, LockInfo};
///
/// /// `{"order_id": "o-1", ...}` locks on `o-1`; the handler still reads the whole body.
/// fn order_id(_: &http::request::Parts, body: &[u8]) -> Option<String> {
///     let json: serde_json::Value = serde_json::from_slice(body).ok()?;
///     Some(json.get("order_id")?.as_str()?.to_owned())
/// }
///
/// async fn pay(Extension(lock): Extension<LockInfo>, body: Bytes) -> String {
///     format!("{} bytes under {}", body.len(), lock.key)
/// }
///
/// let layer = KeyedLockLayer::new(LockClient::new(MemoryBackend::new()), BodyKey::new(16 * 1024, order_id));
/// let app: Router = Router::new().route("/pay", post(pay)).route_layer(layer);
/// # let _ = app;
/// ```
pub struct BodyKey<F> {
    limit: BodyLimit,
    key: Arc<F>,
}

impl<F> BodyKey<F> {
    /// Reads at most `max_bytes` bytes of the body and finds the key in them with `key`.
    ///
    /// ```
    /// let by_body = lock_tower::BodyKey::new(1024, |_: &http::request::Parts, body: &[u8]| {
    ///     std::str::from_utf8(body).ok().map(str::to_owned)
    /// });
    /// # let _ = by_body;
    /// ```
    pub fn new(max_bytes: usize, key: F) -> Self {
        Self {
            limit: BodyLimit::new(max_bytes),
            key: Arc::new(key),
        }
    }
}

impl<F> Clone for BodyKey<F> {
    fn clone(&self) -> Self {
        Self {
            limit: self.limit,
            key: self.key.clone(),
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

impl<B, F> KeyExtractor<B> for BodyKey<F>
where
    B: Body<Data = Bytes> + From<Bytes> + Send + 'static,
    F: Fn(&Parts, &[u8]) -> Option<String> + Send + Sync + 'static,
{
    /// No key without the body, which [`key`](Self::key) reads.
    fn extract(&self, _request: &Request<B>) -> Option<String> {
        None
    }

    fn describe(&self) -> String {
        BodyLimit::DESCRIBE.to_owned()
    }

    fn key(&self, request: Request<B>) -> impl Future<Output = KeyFound<B>> + Send {
        let (limit, key) = (self.limit, self.key.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body = match read(body, &parts.headers, limit.max_bytes()).await {
                Read::Whole(body) => body,
                Read::TooLarge => return Err(limit.too_large()),
                Read::Failed => return Err(BodyLimit::unreadable()),
            };
            let Some(found) = key(&parts, &body) else {
                return Err(BodyLimit::missing_key());
            };
            Ok((Request::from_parts(parts, B::from(body)), found))
        }
    }
}

/// A key from an async closure that takes the request and gives it back with the key
/// (`None` answers 400), for keys that need awaiting: a lookup, a body of another type.
///
/// ```
/// use http::Request;
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_tower::{AsyncKey, KeyedLockLayer};
///
/// let by_tenant = AsyncKey(|request: Request<String>| async move {
///     // e.g. ask a directory service which account the API key belongs to
///     let tenant = request.headers().get("x-api-key").map(|_| "acme".to_owned());
///     (request, tenant)
/// });
/// let layer = KeyedLockLayer::new(LockClient::new(MemoryBackend::new()), by_tenant);
/// # let _ = layer;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct AsyncKey<F>(pub F);

impl<B, F, Fut> KeyExtractor<B> for AsyncKey<F>
where
    B: Send + 'static,
    F: Fn(Request<B>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = (Request<B>, Option<String>)> + Send,
{
    /// No key without awaiting the closure, which [`key`](Self::key) does.
    fn extract(&self, _request: &Request<B>) -> Option<String> {
        None
    }

    fn key(&self, request: Request<B>) -> impl Future<Output = KeyFound<B>> + Send {
        let found = (self.0)(request);
        async move {
            match found.await {
                (request, Some(key)) => Ok((request, key)),
                (_, None) => Err(Rejection::missing_key("lock key")),
            }
        }
    }
}
