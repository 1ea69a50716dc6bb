//! Taking the key from a `ServiceRequest`: a [`KeySource`] rule or a closure.

use actix_web::dev::ServiceRequest;
use lock_core::http::keyed::{BodyLimit, KeySource};

use crate::head::Head;

/// Finds the lock key of a request. Implemented for [`KeySource`] and for closures
/// `Fn(&ServiceRequest) -> Option<String>`; `None` answers 400.
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

    /// How much of the body to read before looking for the key: `Some` makes the middleware
    /// read the payload up to the limit (over it: 413), call
    /// [`extract_with_body`](Self::extract_with_body) instead of [`extract`](Self::extract),
    /// and put the payload back for the handler. `None`, the default, reads nothing.
    ///
    /// ```
    /// use lock_actix::{BodyKey, KeyExtractor, KeySource};
    ///
    /// assert_eq!(KeySource::header("x-sku").body_limit(), None);
    /// let by_body = BodyKey::new(1024, |_: &actix_web::HttpRequest, body: &[u8]| {
    ///     std::str::from_utf8(body).ok().map(str::to_owned)
    /// });
    /// assert_eq!(by_body.body_limit().map(|limit| limit.max_bytes()), Some(1024));
    /// ```
    fn body_limit(&self) -> Option<BodyLimit> {
        None
    }

    /// The key of a request whose body was read whole (see
    /// [`body_limit`](Self::body_limit)); the default ignores the body.
    fn extract_with_body(&self, request: &ServiceRequest, body: &[u8]) -> Option<String> {
        let _ = body;
        self.extract(request)
    }
}

impl KeyExtractor for KeySource {
    fn extract(&self, request: &ServiceRequest) -> Option<String> {
        KeySource::extract(self, &Head(request))
    }

    fn describe(&self) -> String {
        KeySource::describe(self)
    }

    fn selects(&self, request: &ServiceRequest) -> bool {
        KeySource::selects(self, &Head(request))
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
