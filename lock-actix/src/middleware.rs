//! [`KeyedLock`] (the `Transform`) and [`KeyedLockMiddleware`] (the service it builds).

use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::rc::Rc;

use actix_web::body::{BoxBody, EitherBody};
use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::StatusCode;
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use lock_core::http::{KeyedLockOptions, Rejection, RequestLock};
use lock_core::LockClient;

use crate::{KeyExtractor, KeySource};

/// Middleware that runs each selected request under the distributed lock of its key.
///
/// ```
/// use actix_web::{web, App};
/// use lock_actix::{BusyStatus, KeySource, KeyedLock, KeyedLockOptions};
/// use lock_core::{LockClient, MemoryBackend};
///
/// let lock = KeyedLock::new(LockClient::new(MemoryBackend::new()), KeySource::header("Idempotency-Key"))
///     .options(KeyedLockOptions::new().busy_status(BusyStatus::TooManyRequests).methods(["POST"]));
/// let app = App::new().wrap(lock).route("/pay", web::post().to(|| async { "paid" }));
/// # let _ = app;
/// ```
#[must_use]
pub struct KeyedLock<K = KeySource> {
    client: LockClient,
    extractor: Rc<K>,
    options: Rc<KeyedLockOptions>,
}

impl<K: KeyExtractor> KeyedLock<K> {
    /// Locks every request on the key `extractor` finds, with the default options (reject at
    /// once when busy).
    pub fn new(client: LockClient, extractor: K) -> Self {
        Self {
            client,
            extractor: Rc::new(extractor),
            options: Rc::new(KeyedLockOptions::default()),
        }
    }

    /// Replaces the options. Invalid options are logged here and answer 500 at request time;
    /// check them first with [`KeyedLockOptions::validate`].
    pub fn options(mut self, options: KeyedLockOptions) -> Self {
        if let Err(error) = options.validate() {
            tracing::error!(%error, "invalid KeyedLockOptions: locked requests will answer 500");
        }
        self.options = Rc::new(options);
        self
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
        if !options.applies(request.method().as_str(), request.uri().path()) {
            let response = self.service.call(request);
            return Box::pin(
                async move { response.await.map(ServiceResponse::map_into_left_body) },
            );
        }
        let Some(key) = self.lock.extractor.extract(&request) else {
            let rejection = Rejection::missing_key(&self.lock.extractor.describe());
            return Box::pin(ready(Ok(request.into_response(into_response(rejection)))));
        };
        let (service, client) = (self.service.clone(), self.lock.client.clone());
        Box::pin(async move {
            // Acquire while the request is still ours, so a rejection can answer with it.
            let lock = match RequestLock::acquire(&client, &key, &options).await {
                Ok(lock) => lock,
                Err(rejection) => return Ok(request.into_response(into_response(rejection))),
            };
            request.extensions_mut().insert(lock.info().clone());
            match lock.run(service.call(request), &options).await {
                Ok(response) => response.map(ServiceResponse::map_into_left_body),
                // The request went to the cancelled handler (actix routing forbids keeping a
                // clone of it), so the 503 travels as an error that renders the same problem.
                Err(rejection) => Err(LockRejected(rejection).into()),
            }
        })
    }
}

/// A rejection as an actix error: the lost-lease 503 raised after the request was handed on.
#[derive(Debug)]
struct LockRejected(Rejection);

impl std::fmt::Display for LockRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "keyed lock rejected the request ({})", self.0.status)
    }
}

impl ResponseError for LockRejected {
    fn status_code(&self) -> StatusCode {
        status(&self.0)
    }

    fn error_response(&self) -> HttpResponse {
        into_response::<BoxBody>(self.0.clone()).map_into_boxed_body()
    }
}

fn status(rejection: &Rejection) -> StatusCode {
    StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn into_response<B>(rejection: Rejection) -> HttpResponse<EitherBody<B>> {
    let mut response = HttpResponse::build(status(&rejection));
    for header in rejection.headers() {
        response.insert_header(header);
    }
    response.body(rejection.body).map_into_right_body()
}
