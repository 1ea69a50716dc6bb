//! [`KeyedLock`] (the `Transform`, built with lock-core's [`HttpKeyedLockBuilder`]),
//! [`KeyedLockMiddleware`] (the service it builds) and [`LockRejection`] (a `LockError` as the
//! same answer, for handlers).

use std::rc::Rc;
use std::sync::Arc;

use actix_web::body::EitherBody;
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use lock_core::http::keyed::{HttpKeyedLock, HttpKeyedLockBuilder, KeyedLockOptions, RequestLock};
use lock_core::http::Rejection;
use lock_core::{LockClient, LockError};

use crate::response::{from_plain, status};
use crate::transform::{middleware, Chain, LocalBoxFuture};
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

middleware! {
    /// The service [`KeyedLock`] wraps around the rest of the chain.
    pub struct KeyedLockMiddleware<S, K: KeyExtractor>
    for KeyedLock<K>, answering EitherBody<B> where B: 'static
}

impl<K: KeyExtractor> KeyedLock<K> {
    /// One request through the middleware ([`KeyedLockMiddleware`]'s `call`).
    fn handle<S: Chain<B>, B: 'static>(
        &self,
        service: &Rc<S>,
        mut request: ServiceRequest,
    ) -> LocalBoxFuture<Result<ServiceResponse<EitherBody<B>>, Error>> {
        // Not selected, or bound for another route (or none: a 404): pass through untouched.
        if !self
            .options
            .applies(request.method().as_str(), request.uri().path())
            || !self.extractor.selects(&request)
        {
            let response = service.call(request);
            return Box::pin(
                async move { response.await.map(ServiceResponse::map_into_left_body) },
            );
        }
        let (service, lock) = (service.clone(), self.clone());
        Box::pin(async move {
            // Ready at once for most extractors; a body key reads (and puts back) the payload.
            let key = match lock.extractor.key(&mut request).await {
                Ok(key) => key,
                Err(rejection) => return Ok(request.into_response(into_response(rejection))),
            };
            locked(service, lock.client, lock.options, request, key).await
        })
    }
}

/// Takes the lock of `key`, runs the rest of the chain under it and releases it.
async fn locked<S: Chain<B>, B>(
    service: Rc<S>,
    client: LockClient,
    options: Arc<KeyedLockOptions>,
    request: ServiceRequest,
    key: String,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
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

impl From<Rejection> for LockRejection {
    fn from(rejection: Rejection) -> Self {
        Self(rejection)
    }
}

impl From<LockError> for LockRejection {
    fn from(error: LockError) -> Self {
        Self::from_error(&error, &KeyedLockOptions::default())
    }
}

impl ResponseError for LockRejection {
    fn status_code(&self) -> StatusCode {
        status(self.0.response.status)
    }

    fn error_response(&self) -> HttpResponse {
        from_plain(self.0.response.clone()).map_into_boxed_body()
    }
}

impl LockRejection {
    /// The answer for `error` under `options` (its `Retry-After`, busy status and
    /// `expose_errors`); `From<LockError>` uses the default options.
    #[must_use]
    pub fn from_error(error: &LockError, options: &KeyedLockOptions) -> Self {
        Self(Rejection::from_error(error, options))
    }

    /// Wraps a rejection made by lock-core.
    #[must_use]
    pub fn new(rejection: Rejection) -> Self {
        Self(rejection)
    }

    /// Why, and the response as lock-core made it.
    #[must_use]
    pub fn rejection(&self) -> &Rejection {
        &self.0
    }
}

/// lock-core's [`Rejection`] display: why, and the status.
impl std::fmt::Display for LockRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A rejection as the middleware's own answer, beside the chain's responses.
fn into_response<B>(rejection: Rejection) -> HttpResponse<EitherBody<B>> {
    from_plain(rejection.response)
        .map_into_boxed_body()
        .map_into_right_body()
}
