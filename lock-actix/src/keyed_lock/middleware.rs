//! [`KeyedLock`] (the `Transform`, built with lock-core's [`HttpKeyedLockBuilder`]),
//! [`KeyedLockMiddleware`] (the service it builds) and [`LockRejection`] (a `LockError` as the
//! same answer, for handlers).

use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::{self, BodyStream, EitherBody};
use actix_web::dev::{forward_ready, Payload, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use lock_core::http::keyed::{
    BodyLimit, HttpKeyedLock, HttpKeyedLockBuilder, KeyedLockOptions, RequestLock,
};
use lock_core::http::Rejection;
use lock_core::{LockClient, LockError};

use crate::response::from_plain;
use crate::{KeyExtractor, KeySource};

/// Middleware that runs each selected request under the distributed lock of its key.
///
/// Build it with [`builder`](Self::builder): lock-core's [`HttpKeyedLockBuilder`], shared with
/// lock-tower, whose methods are the [`KeyedLockOptions`] and whose
/// [`build`](HttpKeyedLockBuilder::build) refuses invalid settings:
///
/// ```
/// use actix_web::{web, App};
/// use lock_actix::{BusyStatus, KeySource, KeyedLock, LockClient};
/// use lock_core::MemoryBackend;
///
/// let lock = KeyedLock::builder(LockClient::new(MemoryBackend::new()), KeySource::header("Idempotency-Key"))
///     .busy_status(BusyStatus::TooManyRequests)
///     .methods(["POST"])
///     .build()
///     .expect("valid settings");
/// let app = App::new().route("/pay", web::post().to(|| async { "paid" }).wrap(lock));
/// # let _ = app;
/// assert!(KeyedLock::builder(LockClient::new(MemoryBackend::new()), KeySource::path_index(0))
///     .key_prefix("a\0")
///     .build()
///     .is_err());
/// ```
#[must_use]
pub struct KeyedLock<K = KeySource> {
    client: LockClient,
    // Shared by the clones each worker's `App` takes, across threads: `Arc`, so the middleware
    // is built once before the server and cloned into every worker, as the others are.
    extractor: Arc<K>,
    options: Arc<KeyedLockOptions>,
}

impl<K: KeyExtractor> KeyedLock<K> {
    /// Locks every request on the key `extractor` finds, with the default options (reject at
    /// once when busy).
    pub fn new(client: LockClient, extractor: K) -> Self {
        Self {
            client,
            extractor: Arc::new(extractor),
            options: Arc::new(KeyedLockOptions::default()),
        }
    }

    /// Starts a middleware whose settings [`build`](HttpKeyedLockBuilder::build) checks.
    pub fn builder(client: LockClient, extractor: K) -> HttpKeyedLockBuilder<K, Self> {
        HttpKeyedLockBuilder::new(client, extractor)
    }

    /// The answer this middleware gives for `error` (its `Retry-After`, busy status and
    /// [`expose_errors`](HttpKeyedLockBuilder::expose_errors) setting), for a handler that
    /// takes a lock of its own and wants to fail the same way.
    pub fn rejection(&self, error: &LockError) -> LockRejection {
        LockRejection::from_error(error, &self.options)
    }

    /// Replaces the options. Invalid options are logged here and answer 500 at request time;
    /// [`builder`](Self::builder) refuses them instead.
    pub fn options(mut self, options: KeyedLockOptions) -> Self {
        if let Err(error) = options.validate() {
            tracing::error!(%error, "invalid KeyedLockOptions: locked requests will answer 500");
        }
        self.options = Arc::new(options);
        self
    }
}

impl<K: KeyExtractor> From<HttpKeyedLock<K>> for KeyedLock<K> {
    fn from(built: HttpKeyedLock<K>) -> Self {
        let (client, extractor, options) = built.into_parts();
        Self {
            client,
            extractor: Arc::new(extractor),
            options: Arc::new(options),
        }
    }
}

impl<K> Clone for KeyedLock<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            extractor: self.extractor.clone(),
            options: self.options.clone(),
        }
    }
}

impl<S, B, K> Transform<S, ServiceRequest> for KeyedLock<K>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
    K: KeyExtractor,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = Error;
    type Transform = KeyedLockMiddleware<S, K>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(KeyedLockMiddleware {
            service: Rc::new(service),
            lock: self.clone(),
        }))
    }
}

/// The service [`KeyedLock`] wraps around the rest of the chain.
pub struct KeyedLockMiddleware<S, K> {
    service: Rc<S>,
    lock: KeyedLock<K>,
}

type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

impl<S, B, K> Service<ServiceRequest> for KeyedLockMiddleware<S, K>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: 'static,
    K: KeyExtractor,
{
    type Response = ServiceResponse<EitherBody<B>>;
    type Error = Error;
    type Future = LocalBoxFuture<Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, request: ServiceRequest) -> Self::Future {
        let options = self.lock.options.clone();
        // Not selected, or bound for another route (or none: a 404): pass through untouched.
        if !options.applies(request.method().as_str(), request.uri().path())
            || !self.lock.extractor.selects(&request)
        {
            let response = self.service.call(request);
            return Box::pin(
                async move { response.await.map(ServiceResponse::map_into_left_body) },
            );
        }
        let service = self.service.clone();
        let client = self.lock.client.clone();
        if let Some(limit) = self.lock.extractor.body_limit() {
            let extractor = self.lock.extractor.clone();
            return Box::pin(async move {
                let mut request = request;
                let body = match read_body(&mut request, limit).await {
                    Ok(body) => body,
                    Err(rejection) => return Ok(request.into_response(into_response(rejection))),
                };
                let key = extractor.extract_with_body(&request, &body);
                // The handler reads the same bytes.
                request.set_payload(Payload::from(body));
                let Some(key) = key else {
                    let rejection = Rejection::missing_key(&extractor.describe());
                    return Ok(request.into_response(into_response(rejection)));
                };
                locked(service, client, options, request, key).await
            });
        }
        let Some(key) = self.lock.extractor.extract(&request) else {
            let rejection = Rejection::missing_key(&self.lock.extractor.describe());
            return Box::pin(ready(Ok(request.into_response(into_response(rejection)))));
        };
        Box::pin(locked(service, client, options, request, key))
    }
}

/// Takes the lock of `key`, runs the rest of the chain under it and releases it.
async fn locked<S, B>(
    service: Rc<S>,
    client: LockClient,
    options: Arc<KeyedLockOptions>,
    request: ServiceRequest,
    key: String,
) -> Result<ServiceResponse<EitherBody<B>>, Error>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
{
    // Acquire while the request is still ours, so a rejection can answer with it.
    let lock = match RequestLock::acquire(&client, &key, &options).await {
        Ok(lock) => lock,
        Err(rejection) => return Ok(request.into_response(into_response(rejection))),
    };
    request.extensions_mut().insert(lock.info().clone());
    match lock
        .run(service.call(request), &options, crate::status::status_of)
        .await
    {
        Ok(response) => response.map(ServiceResponse::map_into_left_body),
        // The request went to the cancelled handler (actix routing forbids keeping a clone
        // of it), so the 503 travels as an error that renders the same problem.
        Err(rejection) => Err(LockRejection(rejection).into()),
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

/// A lock failure as the `application/problem+json` answer [`KeyedLock`] gives (busy → 409
/// with `Retry-After`, unavailable or lost → 503 with a generic body, …): an actix
/// [`ResponseError`], so a handler that takes a lock itself can return
/// `Result<_, LockRejection>` and use `?` on a [`LockError`].
///
/// ```
/// use actix_web::ResponseError;
/// use lock_actix::{LockClient, LockRejection};
///
/// async fn restock(locks: actix_web::web::Data<LockClient>) -> Result<&'static str, LockRejection> {
///     let lock = locks.lock("stock").await?;
///     lock.release().await?;
///     Ok("restocked")
/// }
/// # let _ = restock;
///
/// let down = LockRejection::from(lock_core::LockError::unavailable("redis", "connection refused"));
/// assert_eq!(down.status_code(), 503);
/// assert!(!format!("{down}").contains("refused"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRejection(Rejection);

impl LockRejection {
    /// Wraps a rejection made by lock-core.
    #[must_use]
    pub fn new(rejection: Rejection) -> Self {
        Self(rejection)
    }

    /// The answer for `error` under `options` (its `Retry-After`, busy status and
    /// `expose_errors`); `From<LockError>` uses the default options.
    #[must_use]
    pub fn from_error(error: &LockError, options: &KeyedLockOptions) -> Self {
        Self(Rejection::from_error(error, options))
    }

    /// Why, and the response as lock-core made it.
    #[must_use]
    pub fn rejection(&self) -> &Rejection {
        &self.0
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

impl std::fmt::Display for LockRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lock rejection ({:?}, {})",
            self.0.kind, self.0.response.status
        )
    }
}

impl ResponseError for LockRejection {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.0.response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        from_plain(self.0.response.clone()).map_into_boxed_body()
    }
}

/// A rejection as the middleware's own answer, beside the chain's responses.
fn into_response<B>(rejection: Rejection) -> HttpResponse<EitherBody<B>> {
    from_plain(rejection.response)
        .map_into_boxed_body()
        .map_into_right_body()
}
