//! [`HttpIdempotency`]: the checked settings of an idempotency middleware, which both
//! adapters are built from, and [`HttpIdempotencyBuilder`], the one builder of them.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use super::IdempotencyRules;
use crate::idempotency::{Idempotency, InFlight};
use crate::LockError;

/// How a request's scope (its principal) is found, from the adapter's view `R` of it.
type ScopeFn<R> = dyn Fn(&R) -> Option<String> + Send + Sync;

/// An idempotency middleware's settings, checked: the [`Idempotency`] client (its records
/// and claims), the [`IdempotencyRules`], and how a request's scope is found. `R` is what the
/// scope is read from: the adapter's view of a request (`http::request::Parts` for
/// lock-tower, `ServiceRequest` for lock-actix). Made only by
/// [`HttpIdempotencyBuilder::build`], so its rules are valid.
///
/// ```
/// use lock_core::http::idempotency::HttpIdempotency;
/// use lock_core::idempotency::Idempotency;
///
/// /// A framework's request, as an adapter sees it.
/// struct Request { user: Option<String> }
///
/// let payments = Idempotency::memory("payments").unwrap();
/// let built: HttpIdempotency<Request> = HttpIdempotency::builder(payments)
///     .scope(|request: &Request| request.user.clone())
///     .build()
///     .unwrap();
/// assert_eq!(built.scope(&Request { user: Some("alice".into()) }), "alice");
/// assert_eq!(built.scope(&Request { user: None }), "", "the anonymous scope");
/// ```
pub struct HttpIdempotency<R: ?Sized> {
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scope: Option<Box<ScopeFn<R>>>,
}

impl<R: ?Sized> HttpIdempotency<R> {
    /// Settings over `idempotency`, with the [`IdempotencyRules::new`] defaults and every
    /// request in the anonymous scope.
    pub fn builder(idempotency: Idempotency) -> HttpIdempotencyBuilder<R> {
        HttpIdempotencyBuilder::new(idempotency)
    }

    /// The idempotency client (for its [`stats`](Idempotency::stats), say).
    #[must_use]
    pub fn idempotency(&self) -> &Idempotency {
        &self.idempotency
    }

    /// The rules, valid.
    pub fn rules(&self) -> &IdempotencyRules {
        &self.rules
    }

    /// The scope of `request`: what the [`scope`](HttpIdempotencyBuilder::scope) function
    /// says, or `""`, the anonymous scope.
    #[must_use]
    pub fn scope(&self, request: &R) -> String {
        self.scope
            .as_ref()
            .and_then(|scope| scope(request))
            .unwrap_or_default()
    }
}

impl<R: ?Sized> fmt::Debug for HttpIdempotency<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpIdempotency")
            .field("idempotency", &self.idempotency)
            .field("rules", &self.rules)
            .field("scoped", &self.scope.is_some())
            .finish()
    }
}

/// The settings of an idempotency middleware: the builder of both adapters
/// (`lock_tower::IdempotencyLayer::builder`, `lock_actix::Idempotent::builder`), so they take
/// the same settings. Each rule method is the [`IdempotencyRules`] method of the same name;
/// [`scope`](Self::scope) reads the adapter's view `R` of a request. [`build`](Self::build)
/// checks the rules ([`IdempotencyRules::validate`]) and makes a `T`: an [`HttpIdempotency`],
/// or an adapter's middleware (any `T: From<HttpIdempotency<R>>`).
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::idempotency::HttpIdempotency;
/// use lock_core::idempotency::{Idempotency, InFlight};
///
/// let payments = Idempotency::memory("payments").unwrap();
/// let built = HttpIdempotency::<()>::builder(payments.clone())
///     .methods(["POST"])
///     .fingerprint_header("content-type")
///     .in_flight(InFlight::Wait(Duration::from_secs(5)))
///     .build();
/// assert!(built.is_ok());
/// assert!(HttpIdempotency::<()>::builder(payments).max_key_len(0).build().is_err());
/// ```
#[must_use]
pub struct HttpIdempotencyBuilder<R: ?Sized, T = HttpIdempotency<R>> {
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scope: Option<Box<ScopeFn<R>>>,
    // `fn() -> T`: the builder makes a `T`, it holds none (and stays `Send + Sync`).
    output: PhantomData<fn() -> T>,
}

impl<R: ?Sized, T> HttpIdempotencyBuilder<R, T> {
    /// Settings over `idempotency` (its records and claims: memory for one process;
    /// `Idempotency::builder(RedisResultStore::connect(&backend).await?, backend)` across
    /// instances), with the [`IdempotencyRules::new`] defaults and every request in the
    /// anonymous scope.
    pub fn new(idempotency: Idempotency) -> Self {
        Self {
            idempotency,
            rules: IdempotencyRules::new(),
            scope: None,
            output: PhantomData,
        }
    }

    fn change(mut self, change: impl FnOnce(IdempotencyRules) -> IdempotencyRules) -> Self {
        self.rules = change(self.rules);
        self
    }

    /// See [`IdempotencyRules::header`].
    pub fn header(self, name: impl Into<String>) -> Self {
        self.change(|r| r.header(name))
    }

    /// See [`IdempotencyRules::optional`].
    pub fn optional(self) -> Self {
        self.change(IdempotencyRules::optional)
    }

    /// See [`IdempotencyRules::methods`].
    pub fn methods<I, S>(self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.change(|r| r.methods(methods))
    }

    /// See [`IdempotencyRules::max_key_len`].
    pub fn max_key_len(self, limit: usize) -> Self {
        self.change(|r| r.max_key_len(limit))
    }

    /// See [`IdempotencyRules::fingerprint_header`].
    pub fn fingerprint_header(self, name: impl Into<String>) -> Self {
        self.change(|r| r.fingerprint_header(name))
    }

    /// See [`IdempotencyRules::max_body_bytes`].
    pub fn max_body_bytes(self, limit: usize) -> Self {
        self.change(|r| r.max_body_bytes(limit))
    }

    /// See [`IdempotencyRules::in_flight`].
    pub fn in_flight(self, policy: InFlight) -> Self {
        self.change(|r| r.in_flight(policy))
    }

    /// See [`IdempotencyRules::retry_after`].
    pub fn retry_after(self, after: Duration) -> Self {
        self.change(|r| r.retry_after(after))
    }

    /// See [`IdempotencyRules::store_status`].
    pub fn store_status(self, keep: fn(u16) -> bool) -> Self {
        self.change(|r| r.store_status(keep))
    }

    /// Replaces every rule at once (rules shared with another middleware, say).
    pub fn rules(self, rules: IdempotencyRules) -> Self {
        self.change(|_| rules)
    }

    /// The scope (principal) of a request, from the adapter's view of it (lock-tower:
    /// `&http::request::Parts`; lock-actix: `&ServiceRequest`): keys of different scopes are
    /// different records, so one user cannot replay another's response. Typically the user
    /// an authentication middleware (outside this one) put in the extensions; `None` (and the
    /// default) is the anonymous scope, shared by every request without one.
    pub fn scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&R) -> Option<String> + Send + Sync + 'static,
    {
        self.scope = Some(Box::new(scope));
        self
    }

    /// Checks the rules ([`IdempotencyRules::validate`]) and makes the `T`.
    pub fn build(self) -> Result<T, LockError>
    where
        T: From<HttpIdempotency<R>>,
    {
        Ok(T::from(HttpIdempotency {
            idempotency: self.idempotency,
            rules: self.rules.validate()?,
            scope: self.scope,
        }))
    }
}

impl<R: ?Sized, T> fmt::Debug for HttpIdempotencyBuilder<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpIdempotencyBuilder")
            .field("rules", &self.rules)
            .field("scoped", &self.scope.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_methods_forward_to_the_rules() {
        let idempotency = || Idempotency::memory("builder").unwrap();
        let built = HttpIdempotency::<str>::builder(idempotency())
            .header("X-Key")
            .optional()
            .methods(["put"])
            .max_key_len(40)
            .fingerprint_header("Content-Type")
            .max_body_bytes(10)
            .in_flight(InFlight::Wait(Duration::from_secs(2)))
            .retry_after(Duration::from_secs(3))
            .store_status(|status| status == 201)
            .scope(|user: &str| (!user.is_empty()).then(|| user.to_owned()))
            .build()
            .unwrap();
        let rules = built.rules();
        assert_eq!(rules.max_body_bytes_limit(), 10);
        assert!(rules.should_store(201) && !rules.should_store(200));
        assert_eq!(rules.retry_after_secs(), 3);
        let debug = format!("{built:?}");
        for part in [
            "x-key",
            "required: false",
            "PUT",
            "40",
            "content-type",
            "scoped: true",
        ] {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
        assert_eq!(
            (built.scope("bob"), built.scope("")),
            ("bob".into(), "".into())
        );
        let replaced = HttpIdempotency::<str>::builder(idempotency())
            .max_key_len(0)
            .rules(IdempotencyRules::new());
        assert!(replaced.build().is_ok());
    }
}
