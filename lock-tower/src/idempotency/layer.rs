//! [`IdempotencyLayer`] and its builder: wraps services in [`IdempotencyService`].

use std::sync::Arc;

use http::request::Parts;
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::Idempotency;
use lock_core::LockError;
use tower_layer::Layer;

use super::IdempotencyService;

/// How a request's scope (its principal) is found.
pub(crate) type ScopeFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

/// Runs each request with an idempotency key once per (scope, key) across every instance,
/// and answers its duplicates with its response (see the [module docs](crate::idempotency)).
///
/// Settings are builder methods (those of [`IdempotencyRules`], and the
/// [`scope`](IdempotencyLayerBuilder::scope) of a request), checked by
/// [`build`](IdempotencyLayerBuilder::build):
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
    pub(super) shared: Arc<Shared>,
}

/// What every service of a layer shares.
pub(super) struct Shared {
    pub(super) idempotency: Idempotency,
    pub(super) rules: IdempotencyRules,
    pub(super) scope: Option<Box<ScopeFn>>,
}

impl IdempotencyLayer {
    /// The layer's settings, over `idempotency` (its records and claims: memory for one
    /// process; `Idempotency::builder(RedisResultStore::connect(&backend).await?, backend)`
    /// across instances). Default rules: [`IdempotencyRules::new`]; every request in the
    /// anonymous scope.
    pub fn builder(idempotency: Idempotency) -> IdempotencyLayerBuilder {
        IdempotencyLayerBuilder {
            idempotency,
            rules: IdempotencyRules::new(),
            scope: None,
        }
    }

    /// The idempotency client (for its [`stats`](Idempotency::stats), say).
    #[must_use]
    pub fn idempotency(&self) -> &Idempotency {
        &self.shared.idempotency
    }

    /// The rules the layer applies.
    pub fn rules(&self) -> &IdempotencyRules {
        &self.shared.rules
    }
}

impl std::fmt::Debug for IdempotencyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyLayer")
            .field("idempotency", &self.shared.idempotency)
            .field("rules", &self.shared.rules)
            .field("scoped", &self.shared.scope.is_some())
            .finish()
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = IdempotencyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IdempotencyService::new(inner, self.shared.clone())
    }
}

/// Configures an [`IdempotencyLayer`]; from [`IdempotencyLayer::builder`]. The rule methods
/// are [`IdempotencyRules`]'s.
#[must_use]
pub struct IdempotencyLayerBuilder {
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scope: Option<Box<ScopeFn>>,
}

impl IdempotencyLayerBuilder {
    // `header`, `optional`, `methods`, ... `rules`: IdempotencyRules's settings, written once
    // in lock-core for both adapters.
    lock_core::__idempotency_rule_methods!(rules, "layer");

    /// The scope (principal) of a request, from its head: keys of different scopes are
    /// different records, so one user cannot replay another's response. Typically the user an
    /// authentication layer put in the extensions; `None` (and the default) is the anonymous
    /// scope, shared by every request without one.
    pub fn scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        self.scope = Some(Box::new(scope));
        self
    }

    /// Checks the rules ([`IdempotencyRules::validate`]) and builds the layer.
    pub fn build(self) -> Result<IdempotencyLayer, LockError> {
        Ok(IdempotencyLayer {
            shared: Arc::new(Shared {
                idempotency: self.idempotency,
                rules: self.rules.validate()?,
                scope: self.scope,
            }),
        })
    }
}

impl std::fmt::Debug for IdempotencyLayerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyLayerBuilder")
            .field("rules", &self.rules)
            .field("scoped", &self.scope.is_some())
            .finish_non_exhaustive()
    }
}
