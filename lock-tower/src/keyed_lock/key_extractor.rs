//! Taking the key from an `http::Request`: a [`KeySource`] rule, a closure, or anything
//! that needs the request by value and awaiting, such as its body.

use std::future::Future;

use http::Request;
use lock_core::http::keyed::KeySource;
use lock_core::http::Rejection;

use crate::head::head;

/// What [`KeyExtractor::key`] finds: the request, given back for the handler, and its key; or
/// the answer to send instead.
///
/// ```
/// use http::Request;
/// use lock_tower::{KeyFound, Rejection};
///
/// let found: KeyFound<()> = Ok((Request::new(()), "sku-1".to_owned()));
/// let refused: KeyFound<()> = Err(Rejection::missing_key("header `x-sku`"));
/// assert!(found.is_ok() && refused.is_err());
/// ```
pub type KeyFound<B> = Result<(Request<B>, String), Rejection>;

/// Finds the lock key of a request. Implemented for [`KeySource`] and for closures
/// `Fn(&Request<B>) -> Option<String>`; `None` answers 400. Keys that need the request by
/// value and awaiting override [`key`](Self::key): [`BodyKey`](crate::BodyKey) (the body),
/// [`AsyncKey`](crate::AsyncKey) (any async closure). The methods are those of lock-actix's
/// `KeyExtractor`, with the same meaning, over `http::Request` (which `key` takes by value, to
/// read its body and give it back).
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
pub trait KeyExtractor<B: Send + 'static>: Clone + Send + Sync + 'static {
    /// The key, or `None` when the request has no usable one.
    fn extract(&self, request: &Request<B>) -> Option<String>;

    /// Where the key is looked for, for the 400 answer.
    fn describe(&self) -> String {
        "lock key".to_owned()
    }

    /// Whether the request is this extractor's business at all; when `false` it passes
    /// through the layer untouched (no lock, no 400). [`KeySource::path_param`] selects the
    /// paths its route template matches and [`KeySource::route_param`] the routes with its
    /// parameter ([`KeySource::selects`]); the default selects every request.
    fn selects(&self, request: &Request<B>) -> bool {
        let _ = request;
        true
    }

    /// The answer for a selected request without a key: by default
    /// [`Rejection::missing_key`] of [`describe`](Self::describe).
    ///
    /// ```
    /// use http::Request;
    /// use lock_tower::{KeyExtractor, KeySource};
    ///
    /// let request = Request::post("/buy/a").body(()).unwrap();
    /// let answer = KeyExtractor::missing(&KeySource::header("x-sku"), &request);
    /// assert_eq!(answer.response.status, 400);
    /// ```
    fn missing(&self, request: &Request<B>) -> Rejection {
        let _ = request;
        Rejection::missing_key(&self.describe())
    }

    /// The request, given back for the handler, and its key; or the answer to send instead
    /// (400 without a key, 413 for a body over a limit, …). This is what
    /// [`KeyedLockService`](crate::KeyedLockService) calls; the default answers at once with
    /// [`extract`](Self::extract), or [`missing`](Self::missing) when it finds nothing.
    ///
    /// ```
    /// use std::future::{ready, Future};
    /// use http::Request;
    /// use lock_tower::{KeyExtractor, KeyFound, Rejection};
    ///
    /// /// The key is the `x-sku` header, upper-cased, found by an async lookup.
    /// #[derive(Clone)]
    /// struct UpperSku;
    /// impl<B: Send + 'static> KeyExtractor<B> for UpperSku {
    ///     fn extract(&self, _: &Request<B>) -> Option<String> {
    ///         None // found by `key`
    ///     }
    ///     fn key(&self, request: Request<B>) -> impl Future<Output = KeyFound<B>> + Send {
    ///         async move {
    ///             let sku = request.headers().get("x-sku").and_then(|v| v.to_str().ok());
    ///             match sku.map(str::to_uppercase) {
    ///                 Some(sku) => Ok((request, sku)),
    ///                 None => Err(Rejection::missing_key("header `x-sku`")),
    ///             }
    ///         }
    ///     }
    /// }
    /// # let _ = UpperSku;
    /// # let _ = ready(());
    /// ```
    fn key(&self, request: Request<B>) -> impl Future<Output = KeyFound<B>> + Send {
        let key = match self.extract(&request) {
            Some(key) => Ok((request, key)),
            None => Err(self.missing(&request)),
        };
        std::future::ready(key)
    }
}

impl<B: Send + 'static> KeyExtractor<B> for KeySource {
    fn extract(&self, request: &Request<B>) -> Option<String> {
        KeySource::extract(self, &head(request))
    }

    fn describe(&self) -> String {
        KeySource::describe(self)
    }

    fn selects(&self, request: &Request<B>) -> bool {
        KeySource::selects(self, &head(request))
    }

    fn missing(&self, request: &Request<B>) -> Rejection {
        KeySource::missing_key(self, &head(request))
    }
}

impl<B, F> KeyExtractor<B> for F
where
    B: Send + 'static,
    F: Fn(&Request<B>) -> Option<String> + Clone + Send + Sync + 'static,
{
    fn extract(&self, request: &Request<B>) -> Option<String> {
        self(request)
    }
}

#[cfg(test)]
mod tests {
    /// Without the `axum` feature no router is visible: a route parameter answers 400 saying
    /// why, rather than letting the request through unlocked.
    #[cfg(not(feature = "axum"))]
    #[tokio::test]
    async fn without_axum_a_route_param_fails_closed() {
        use std::convert::Infallible;

        use http::{Request, Response};
        use lock_core::{LockClient, MemoryBackend};
        use tower::{service_fn, Layer, ServiceExt};

        use crate::{KeySource, KeyedLockLayer};

        let inner = service_fn(|_: Request<String>| async {
            Ok::<_, Infallible>(Response::new(String::from("unlocked")))
        });
        let layer = KeyedLockLayer::new(
            LockClient::new(MemoryBackend::new()),
            KeySource::route_param("sku"),
        );
        let request = Request::post("/buy/a").body(String::new()).unwrap();
        let response = layer.layer(inner).oneshot(request).await.unwrap();
        assert_eq!(response.status(), 400);
        let body = response.into_body();
        assert!(body.contains("route parameter `sku`"), "{body}");
        assert!(
            body.contains("enable lock-tower's `axum` feature"),
            "{body}"
        );
    }

    /// Without the `axum` feature the builder refuses a route parameter, naming the feature
    /// and the source that works without it; with it, the same settings build.
    #[test]
    fn the_builder_refuses_a_route_param_only_without_axum() {
        use lock_core::{LockClient, LockError, MemoryBackend};

        use crate::{KeySource, KeyedLockLayer};

        let locks = LockClient::new(MemoryBackend::new());
        let built = KeyedLockLayer::builder(locks.clone(), KeySource::route_param("sku")).build();
        if cfg!(feature = "axum") {
            assert!(built.is_ok());
        } else {
            let error = built.unwrap_err();
            assert!(matches!(error, LockError::InvalidConfig(_)), "{error}");
            let message = error.to_string();
            assert!(message.contains("lock-tower's `axum` feature"), "{message}");
            assert!(message.contains("KeySource::path_param"), "{message}");
        }
        let other = KeyedLockLayer::builder(locks, KeySource::header("x-sku")).build();
        assert!(other.is_ok());
    }
}
