//! Taking the key from a `ServiceRequest`: a [`KeySource`] rule, a closure, or anything that
//! needs awaiting, such as the payload ([`BodyKey`](crate::BodyKey)).

use std::future::Future;

use actix_web::dev::ServiceRequest;
use lock_core::http::keyed::KeySource;
use lock_core::http::Rejection;

use crate::head::head;

/// Finds the lock key of a request. Implemented for [`KeySource`] and for closures
/// `Fn(&ServiceRequest) -> Option<String>`; `None` answers 400. Keys that need awaiting (the
/// payload, with [`BodyKey`](crate::BodyKey)) override [`key`](Self::key). The methods are
/// those of lock-tower's `KeyExtractor`, with the same meaning, over actix-web's request.
///
/// ```
/// use actix_web::dev::ServiceRequest;
/// use lock_actix::KeyedLock;
/// use lock_core::{LockClient, MemoryBackend};
///
/// // The key is the tenant and the path together.
/// let middleware = KeyedLock::new(LockClient::new(MemoryBackend::new()), |req: &ServiceRequest| {
///     let tenant = req.headers().get("x-tenant")?.to_str().ok()?;
///     Some(format!("{tenant}:{}", req.path()))
/// });
/// # let _ = middleware;
/// ```
pub trait KeyExtractor: 'static {
    /// The key, or `None` when the request has no usable one.
    fn extract(&self, request: &ServiceRequest) -> Option<String>;

    /// Where the key is looked for, for the 400 answer.
    fn describe(&self) -> String {
        "lock key".to_owned()
    }

    /// Whether the request is this extractor's business at all; when `false` it passes
    /// through the middleware untouched (no lock, no 400). [`KeySource::path_param`] selects
    /// the paths its route template matches and [`KeySource::route_param`] the resources with
    /// its parameter ([`KeySource::selects`]); the default selects every request.
    fn selects(&self, request: &ServiceRequest) -> bool {
        let _ = request;
        true
    }

    /// The answer for a selected request without a key: by default
    /// [`Rejection::missing_key`] of [`describe`](Self::describe).
    ///
    /// ```
    /// use actix_web::test::TestRequest;
    /// use lock_actix::{KeyExtractor, KeySource};
    ///
    /// let request = TestRequest::post().uri("/buy/a").to_srv_request();
    /// let answer = KeyExtractor::missing(&KeySource::header("x-sku"), &request);
    /// assert_eq!(answer.response.status, 400);
    /// ```
    fn missing(&self, request: &ServiceRequest) -> Rejection {
        let _ = request;
        Rejection::missing_key(&self.describe())
    }

    /// The key of the request, which stays the middleware's to hand on (a key read from the
    /// payload puts it back for the handler); or the answer to send instead (400 without a
    /// key, 413 for a body over a limit, …). This is what
    /// [`KeyedLockMiddleware`](crate::KeyedLockMiddleware) calls; the default answers at once
    /// with [`extract`](Self::extract), or [`missing`](Self::missing) when it finds nothing.
    ///
    /// ```
    /// use actix_web::dev::ServiceRequest;
    /// use lock_actix::{KeyExtractor, Rejection};
    ///
    /// /// The key is the `x-sku` header, upper-cased, found by an async lookup.
    /// struct UpperSku;
    /// impl KeyExtractor for UpperSku {
    ///     fn extract(&self, _: &ServiceRequest) -> Option<String> {
    ///         None // found by `key`
    ///     }
    ///     async fn key(&self, request: &mut ServiceRequest) -> Result<String, Rejection> {
    ///         let sku = request.headers().get("x-sku").and_then(|v| v.to_str().ok());
    ///         sku.map(str::to_uppercase).ok_or_else(|| Rejection::missing_key("header `x-sku`"))
    ///     }
    /// }
    /// # let _ = UpperSku;
    /// ```
    fn key(&self, request: &mut ServiceRequest) -> impl Future<Output = Result<String, Rejection>> {
        std::future::ready(self.extract(request).ok_or_else(|| self.missing(request)))
    }
}

impl KeyExtractor for KeySource {
    fn extract(&self, request: &ServiceRequest) -> Option<String> {
        KeySource::extract(self, &head(request))
    }

    fn describe(&self) -> String {
        KeySource::describe(self)
    }

    fn selects(&self, request: &ServiceRequest) -> bool {
        KeySource::selects(self, &head(request))
    }

    fn missing(&self, request: &ServiceRequest) -> Rejection {
        KeySource::missing_key(self, &head(request))
    }
}

impl<F> KeyExtractor for F
where
    F: Fn(&ServiceRequest) -> Option<String> + 'static,
{
    fn extract(&self, request: &ServiceRequest) -> Option<String> {
        self(request)
    }
}
