//! Taking the key from an `http::Request`: a [`KeySource`] rule or a closure.

use http::Request;
use lock_core::http::{KeySource, RequestHead};

/// Finds the lock key of a request. Implemented for [`KeySource`] and for closures
/// `Fn(&Request<B>) -> Option<String>`; `None` answers 400.
///
/// ```
/// use http::Request;
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_tower::KeyedLockLayer;
///
/// // The key is the tenant and the order id together.
/// let layer = KeyedLockLayer::new(LockClient::new(MemoryBackend::new()), |req: &Request<String>| {
///     let tenant = req.headers().get("x-tenant")?.to_str().ok()?;
///     Some(format!("{tenant}:{}", req.uri().path()))
/// });
/// # let _ = layer;
/// ```
pub trait KeyExtractor<B>: Clone + Send + Sync + 'static {
    /// The key, or `None` when the request has no usable one.
    fn extract(&self, request: &Request<B>) -> Option<String>;

    /// Where the key is looked for, for the 400 answer.
    fn describe(&self) -> String {
        "lock key".to_owned()
    }

    /// Whether the request is this extractor's business at all; when `false` it passes
    /// through the layer untouched (no lock, no 400). [`KeySource::path_param`] selects the
    /// paths its route template matches ([`KeySource::selects`]); the default selects every
    /// request.
    fn selects(&self, request: &Request<B>) -> bool {
        let _ = request;
        true
    }
}

impl<B> KeyExtractor<B> for KeySource {
    fn extract(&self, request: &Request<B>) -> Option<String> {
        KeySource::extract(self, &Head(request))
    }

    fn describe(&self) -> String {
        KeySource::describe(self)
    }

    fn selects(&self, request: &Request<B>) -> bool {
        KeySource::selects(self, &Head(request))
    }
}

impl<B, F> KeyExtractor<B> for F
where
    F: Fn(&Request<B>) -> Option<String> + Clone + Send + Sync + 'static,
{
    fn extract(&self, request: &Request<B>) -> Option<String> {
        self(request)
    }
}

/// An `http::Request` seen through lock-core's [`RequestHead`].
pub(crate) struct Head<'a, B>(pub(crate) &'a Request<B>);

impl<B> RequestHead for Head<'_, B> {
    fn method(&self) -> &str {
        self.0.method().as_str()
    }

    fn path(&self) -> &str {
        self.0.uri().path()
    }

    fn query(&self) -> Option<&str> {
        self.0.uri().query()
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.0.headers().get(name).map(|value| value.as_bytes())
    }
}
