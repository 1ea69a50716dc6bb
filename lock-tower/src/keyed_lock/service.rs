//! [`KeyedLockService`]: the lock around one inner service.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use lock_core::http::keyed::{run_locked, KeyedLockOptions};
use lock_core::LockClient;
use tower_service::Service;

use crate::status::status_of;
use crate::{KeyExtractor, LockRejection, ResponseFuture};

/// Runs the inner service under the lock of each selected request's key; built by
/// [`KeyedLockLayer`](crate::KeyedLockLayer).
///
/// The response body type must be buildable from the rejection's JSON text (`From<String>`,
/// as axum's `Body`, `http_body_util::Full<Bytes>` and `String` are).
///
/// ```
/// use std::convert::Infallible;
/// use http::{Request, Response};
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_tower::{KeySource, KeyedLockLayer};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let inner = service_fn(|_req: Request<String>| async {
///     Ok::<_, Infallible>(Response::new(String::from("done")))
/// });
/// let layer = KeyedLockLayer::new(LockClient::new(MemoryBackend::new()), KeySource::path_index(0));
/// let service = layer.layer(inner); // still `Error = Infallible`
/// let response = service.oneshot(Request::new(String::new())).await.unwrap();
/// assert_eq!(response.status(), 400, "`/` has no path segment 0");
///
/// // A request the key's route template does not match is not the layer's business.
/// let layer = KeyedLockLayer::new(
///     LockClient::new(MemoryBackend::new()),
///     KeySource::path_param("/buy/{sku}", "sku"),
/// );
/// let inner = service_fn(|_req: Request<String>| async {
///     Ok::<_, Infallible>(Response::new(String::from("not found")))
/// });
/// let response = layer.layer(inner).oneshot(Request::new(String::new())).await.unwrap();
/// assert_eq!(response.into_body(), "not found");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct KeyedLockService<S, K> {
    inner: S,
    client: LockClient,
    // Shared with each request's future, which may await the key.
    extractor: Arc<K>,
    options: Arc<KeyedLockOptions>,
}

impl<S, K> KeyedLockService<S, K> {
    pub(crate) fn new(
        inner: S,
        client: LockClient,
        extractor: K,
        options: Arc<KeyedLockOptions>,
    ) -> Self {
        Self {
            inner,
            client,
            extractor: Arc::new(extractor),
            options,
        }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, K, ReqBody, ResBody> Service<Request<ReqBody>> for KeyedLockService<S, K>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    K: KeyExtractor<ReqBody>,
    ReqBody: Send + 'static,
    ResBody: From<String> + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<Result<Response<ResBody>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // Not selected, or bound for another route (or none: a 404): pass through untouched.
        if !self
            .options
            .applies(request.method().as_str(), request.uri().path())
            || !self.extractor.selects(&request)
        {
            return ResponseFuture::new(self.inner.call(request));
        }
        // The service that was polled ready is the one to call; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (client, options) = (self.client.clone(), self.options.clone());
        let extractor = self.extractor.clone();
        ResponseFuture::new(async move {
            // Ready at once for a `KeyExtractor`; a body key reads (and gives back) the body.
            let (mut request, key) = match extractor.key(request).await {
                Ok(found) => found,
                Err(rejection) => return Ok(LockRejection::new(rejection).into_response()),
            };
            let handler = |info| {
                request.extensions_mut().insert(info);
                inner.call(request)
            };
            let locked = run_locked(&client, &key, &options, handler, status_of).await;
            match locked {
                Ok(response) => response,
                Err(rejection) => Ok(LockRejection::new(rejection).into_response()),
            }
        })
    }
}
