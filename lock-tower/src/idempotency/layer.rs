//! [`IdempotencyLayer`]: wraps services in [`IdempotencyService`].

use std::sync::Arc;

use http::request::Parts;
use lock_core::http::idempotency::{HttpIdempotency, HttpIdempotencyBuilder};
use lock_core::idempotency::Idempotency;
use tower_layer::Layer;

use super::IdempotencyService;

/// Runs each request with an idempotency key once per (scope, key) across every instance,
/// and answers its duplicates with its response (see the [module docs](crate::idempotency)).
///
/// Settings are the methods of lock-core's [`HttpIdempotencyBuilder`], shared with
/// lock-actix (those of [`IdempotencyRules`](lock_core::http::idempotency::IdempotencyRules), and the
/// [`scope`](HttpIdempotencyBuilder::scope) of a request, read from its
/// [`Parts`]), checked by [`build`](HttpIdempotencyBuilder::build):
///
/// ```
/// use std::time::Duration;
/// use lock_core::idempotency::{Idempotency, InFlight};
/// use lock_tower::IdempotencyLayer;
///
/// #[derive(Clone)]
/// struct User(String); // put in the extensions by the authentication layer
///
/// let payments = Idempotency::memory("payments").unwrap();
/// let layer = IdempotencyLayer::builder(payments.clone())
///     .methods(["POST"])
///     .fingerprint_header("content-type")
///     .in_flight(InFlight::Wait(Duration::from_secs(5)))
///     .scope(|parts: &http::request::Parts| parts.extensions.get::<User>().map(|user| user.0.clone()))
///     .build();
/// assert!(layer.is_ok());
/// assert!(IdempotencyLayer::builder(payments).max_key_len(0).build().is_err());
/// ```
#[derive(Clone)]
#[must_use]
pub struct IdempotencyLayer {
    shared: Arc<HttpIdempotency<Parts>>,
}

impl IdempotencyLayer {
    /// The layer's settings, over `idempotency` (its records and claims: memory for one
    /// process; `Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)`
    /// across instances). Default rules: [`IdempotencyRules::new`](lock_core::http::idempotency::IdempotencyRules::new); no scope until one is
    /// chosen ([`scope`](HttpIdempotencyBuilder::scope), or
    /// [`shared_scope`](HttpIdempotencyBuilder::shared_scope) for a single-tenant service):
    /// `build` refuses settings without that choice.
    pub fn builder(idempotency: Idempotency) -> HttpIdempotencyBuilder<Parts, Self> {
        HttpIdempotencyBuilder::new(idempotency)
    }

    /// What the layer applies: its idempotency client (for its
    /// [`stats`](Idempotency::stats), say) and its rules.
    #[must_use]
    pub fn http_idempotency(&self) -> &HttpIdempotency<Parts> {
        &self.shared
    }
}

impl From<HttpIdempotency<Parts>> for IdempotencyLayer {
    fn from(built: HttpIdempotency<Parts>) -> Self {
        Self {
            shared: Arc::new(built),
        }
    }
}

impl std::fmt::Debug for IdempotencyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("IdempotencyLayer")
            .field(&self.shared)
            .finish()
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = IdempotencyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IdempotencyService::new(inner, self.shared.clone())
    }
}
