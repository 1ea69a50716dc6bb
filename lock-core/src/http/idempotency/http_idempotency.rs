//! [`HttpIdempotency`]: the checked settings of an idempotency middleware, which both
//! adapters are built from, and [`HttpIdempotencyBuilder`], the one builder of them.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use super::serve::reject;
use super::{IdempotencyRules, Reply};
use crate::http::{Rejection, RejectionKind};
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
/// assert_eq!(built.scope(&Request { user: Some("alice".into()) }).unwrap(), "alice");
/// // No principal: refused (401), never the scope of everyone without one.
/// let refused = built.scope(&Request { user: None }).unwrap_err();
/// assert_eq!(refused.response.status, 401);
/// ```
pub struct HttpIdempotency<R: ?Sized> {
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scoping: Scoping<R>,
    unscoped_status: u16,
}

/// How requests are put in scopes: the builder's choice, which it requires.
enum Scoping<R: ?Sized> {
    /// Not chosen yet: [`HttpIdempotencyBuilder::build`] refuses it.
    Unchosen,
    /// Every request in one scope ([`HttpIdempotencyBuilder::shared_scope`]).
    Shared,
    /// Each request in its principal's ([`HttpIdempotencyBuilder::scope`]).
    By(Box<ScopeFn<R>>),
}

impl<R: ?Sized> Scoping<R> {
    fn describe(&self) -> &'static str {
        match self {
            Self::Unchosen => "unchosen",
            Self::Shared => "shared",
            Self::By(_) => "per principal",
        }
    }
}

/// What [`HttpIdempotencyBuilder::build`] answers when no scope was chosen.
const NO_SCOPE_CHOSEN: &str = "an idempotency middleware needs a scope: without one, every \
    caller shares one set of records and a caller sending another's key and body gets the \
    other's stored response. Call .scope(|request| ...) with the authenticated principal (the \
    authentication middleware must run before this one), or .shared_scope() for a \
    single-tenant service whose callers may see each other's responses";

/// The status a request without a scope is refused with, unless set otherwise.
pub const DEFAULT_UNSCOPED_STATUS: u16 = 401;

impl<R: ?Sized> HttpIdempotency<R> {
    /// Settings over `idempotency`, with the [`IdempotencyRules::new`] defaults; the scope is
    /// the caller's to choose ([`HttpIdempotencyBuilder::scope`] or
    /// [`shared_scope`](HttpIdempotencyBuilder::shared_scope)).
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
    /// says, or `""` with [`shared_scope`](HttpIdempotencyBuilder::shared_scope). A request
    /// the function finds no scope for is refused with the answer to send (401 unless
    /// [`unscoped_status`](HttpIdempotencyBuilder::unscoped_status) says otherwise), and
    /// nothing runs: sharing one scope among everyone without a principal would let one of
    /// them replay another's response.
    ///
    /// # Errors
    /// The refusal, when the scope function answers `None`.
    pub fn scope(&self, request: &R) -> Result<String, Reply> {
        match &self.scoping {
            Scoping::By(scope) => scope(request)
                .ok_or_else(|| reject(&self.idempotency, &unscoped(self.unscoped_status))),
            // `build` refuses an unchosen scope; nothing else makes an `HttpIdempotency`.
            Scoping::Shared | Scoping::Unchosen => Ok(String::new()),
        }
    }
}

/// The refusal of a request that has no scope.
fn unscoped(status: u16) -> Rejection {
    Rejection::new(
        RejectionKind::Unscoped,
        status,
        None,
        "No principal for the idempotency key",
        "the request carries no principal to keep its idempotency key under (is the \
         authentication middleware outside the idempotency one?)",
        None,
    )
}

impl<R: ?Sized> fmt::Debug for HttpIdempotency<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpIdempotency")
            .field("idempotency", &self.idempotency)
            .field("rules", &self.rules)
            .field("scope", &self.scoping.describe())
            .field("unscoped_status", &self.unscoped_status)
            .finish()
    }
}

/// The settings of an idempotency middleware: the builder of both adapters
/// (`lock_tower::IdempotencyLayer::builder`, `lock_actix::Idempotency::builder`), so they take
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
///     .shared_scope()
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
    scoping: Scoping<R>,
    unscoped_status: u16,
    // `fn() -> T`: the builder makes a `T`, it holds none (and stays `Send + Sync`).
    output: PhantomData<fn() -> T>,
}

impl<R: ?Sized, T> HttpIdempotencyBuilder<R, T> {
    /// Settings over `idempotency` (its records and claims: memory for one process;
    /// `Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)` across
    /// instances), with the [`IdempotencyRules::new`] defaults; the scope is the caller's to
    /// choose ([`scope`](Self::scope) or [`shared_scope`](Self::shared_scope)), and
    /// [`build`](Self::build) refuses settings without that choice.
    pub fn new(idempotency: Idempotency) -> Self {
        Self {
            idempotency,
            rules: IdempotencyRules::new(),
            scoping: Scoping::Unchosen,
            unscoped_status: DEFAULT_UNSCOPED_STATUS,
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
    /// an authentication middleware put in the extensions: that middleware must run before
    /// this one (in tower, a layer added *after* this one; in actix-web, a `wrap` *after*
    /// this one). A request the function answers `None` for is refused (401, see
    /// [`unscoped_status`](Self::unscoped_status)) and nothing runs.
    pub fn scope<F>(mut self, scope: F) -> Self
    where
        F: Fn(&R) -> Option<String> + Send + Sync + 'static,
    {
        self.scoping = Scoping::By(Box::new(scope));
        self
    }

    /// Every request in one scope: a key sent by any caller is one record, whose response
    /// any caller sending that key and body gets. Only for a single-tenant service (one
    /// client, or clients that may see each other's responses); a service with users wants
    /// [`scope`](Self::scope).
    ///
    /// ```
    /// use lock_core::http::idempotency::HttpIdempotency;
    /// use lock_core::idempotency::Idempotency;
    ///
    /// let jobs = Idempotency::memory("jobs").unwrap();
    /// let built = HttpIdempotency::<()>::builder(jobs).shared_scope().build().unwrap();
    /// assert_eq!(built.scope(&()).unwrap(), "");
    /// ```
    pub fn shared_scope(mut self) -> Self {
        self.scoping = Scoping::Shared;
        self
    }

    /// The status a request without a scope is refused with: 401 (the default) or another
    /// 4xx, 403 say. [`build`](Self::build) refuses any other status.
    pub fn unscoped_status(mut self, status: u16) -> Self {
        self.unscoped_status = status;
        self
    }

    /// Checks the rules ([`IdempotencyRules::validate`]) and the scope's choice, and makes
    /// the `T`.
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for invalid rules, an [`unscoped_status`](Self::unscoped_status)
    /// outside 400..=499, or no scope chosen (the message names both choices):
    ///
    /// ```
    /// use lock_core::http::idempotency::HttpIdempotency;
    /// use lock_core::idempotency::Idempotency;
    ///
    /// let payments = Idempotency::memory("payments").unwrap();
    /// let unscoped = HttpIdempotency::<()>::builder(payments).build().unwrap_err();
    /// assert!(unscoped.to_string().contains(".scope(|request| ...)"));
    /// assert!(unscoped.to_string().contains(".shared_scope()"));
    /// ```
    pub fn build(self) -> Result<T, LockError>
    where
        T: From<HttpIdempotency<R>>,
    {
        let rules = self.rules.validate()?;
        if let Scoping::Unchosen = self.scoping {
            return Err(LockError::InvalidConfig(NO_SCOPE_CHOSEN.to_owned()));
        }
        if !(400..=499).contains(&self.unscoped_status) {
            return Err(LockError::InvalidConfig(format!(
                "unscoped_status must be a 4xx status, not {}",
                self.unscoped_status
            )));
        }
        Ok(T::from(HttpIdempotency {
            idempotency: self.idempotency,
            rules,
            scoping: self.scoping,
            unscoped_status: self.unscoped_status,
        }))
    }
}

impl<R: ?Sized, T> fmt::Debug for HttpIdempotencyBuilder<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpIdempotencyBuilder")
            .field("rules", &self.rules)
            .field("scope", &self.scoping.describe())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Outcome;
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
            .unscoped_status(403)
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
            "scope: \"per principal\"",
            "unscoped_status: 403",
        ] {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
        assert_eq!(built.scope("bob").unwrap(), "bob");
        let refused = built.scope("").unwrap_err();
        assert_eq!(refused.response.status, 403);
        let replaced = HttpIdempotency::<str>::builder(idempotency())
            .max_key_len(0)
            .rules(IdempotencyRules::new())
            .shared_scope();
        assert!(replaced.build().is_ok());
    }

    #[test]
    fn settings_without_a_scope_are_refused_naming_both_choices() {
        let idempotency = || Idempotency::memory("unscoped").unwrap();
        let error = HttpIdempotency::<str>::builder(idempotency())
            .build()
            .unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, LockError::InvalidConfig(_)), "{error:?}");
        for part in [".scope(|request| ...)", ".shared_scope()", "another's"] {
            assert!(message.contains(part), "{part} not in {message}");
        }
        let shared = HttpIdempotency::<str>::builder(idempotency())
            .shared_scope()
            .build()
            .unwrap();
        assert_eq!(shared.scope("anyone").unwrap(), "");
        for status in [200, 500, 0] {
            let error = HttpIdempotency::<str>::builder(idempotency())
                .shared_scope()
                .unscoped_status(status)
                .build()
                .unwrap_err();
            assert!(error.to_string().contains("4xx"), "{error}");
        }
    }

    #[test]
    fn a_request_without_a_scope_is_refused_not_shared() {
        let built = HttpIdempotency::<Option<&str>>::builder(Idempotency::memory("none").unwrap())
            .scope(|user: &Option<&str>| user.map(str::to_owned))
            .build()
            .unwrap();
        let refused = built.scope(&None).unwrap_err();
        assert_eq!(refused.response.status, 401);
        assert_eq!(refused.outcome, Outcome::Rejected);
        let body = String::from_utf8(refused.response.body).unwrap();
        assert!(
            body.contains("urn:distributed-lock:idempotency:unscoped"),
            "{body}"
        );
    }
}
