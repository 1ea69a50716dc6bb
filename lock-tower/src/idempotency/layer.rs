//! [`IdempotencyLayer`] and its builder: wraps services in [`IdempotencyService`].

use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use lock_core::idempotency::http::IdempotencyRules;
use lock_core::idempotency::{Idempotency, InFlight};
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
    /// Reads the key from this header instead of `Idempotency-Key`.
    pub fn header(mut self, name: impl Into<String>) -> Self {
        self.rules = self.rules.header(name);
        self
    }

    /// Requests without a key run as they are, without idempotency (default: 400).
    pub fn optional(mut self) -> Self {
        self.rules = self.rules.optional();
        self
    }

    /// The methods handled (default `POST` and `PATCH`); other requests pass untouched.
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rules = self.rules.methods(methods);
        self
    }

    /// The longest key accepted (default 255; at most 400).
    pub fn max_key_len(mut self, limit: usize) -> Self {
        self.rules = self.rules.max_key_len(limit);
        self
    }

    /// Adds a request header to the fingerprint (a key reused with another value of it gets
    /// 422).
    pub fn fingerprint_header(mut self, name: impl Into<String>) -> Self {
        self.rules = self.rules.fingerprint_header(name);
        self
    }

    /// The largest request body (larger: 413, nothing runs) and response body kept (larger:
    /// replaced by a kept 500 problem). Default 1 MiB.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.rules = self.rules.max_body_bytes(limit);
        self
    }

    /// What a duplicate does while the first request runs (default: 409 at once).
    pub fn in_flight(mut self, policy: InFlight) -> Self {
        self.rules = self.rules.in_flight(policy);
        self
    }

    /// The `Retry-After` of 409 and 503 answers (default 1 s).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.rules = self.rules.retry_after(after);
        self
    }

    /// Which response statuses are kept and replayed (default
    /// [`default_store_status`](lock_core::idempotency::http::default_store_status)).
    pub fn store_status(mut self, keep: fn(u16) -> bool) -> Self {
        self.rules = self.rules.store_status(keep);
        self
    }

    /// Replaces every rule at once (rules shared with another layer, say).
    pub fn rules(mut self, rules: IdempotencyRules) -> Self {
        self.rules = rules;
        self
    }

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
