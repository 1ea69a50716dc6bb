//! [`HttpKeyedLock`]: the checked settings of a keyed-lock middleware, which both adapters
//! are built from, and [`HttpKeyedLockBuilder`], the one builder of them.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use super::{AppliesTo, BusyStatus, KeyedLockOptions, OnLost};
use crate::{LeaseMode, LockClient, LockError, WaitPolicy};

/// A keyed-lock middleware's settings, checked: the [`LockClient`] the locks are taken
/// from, where each request's key comes from (`K`: a [`KeySource`](super::KeySource), or an
/// adapter's extractor), and the [`KeyedLockOptions`]. Made only by
/// [`HttpKeyedLockBuilder::build`], so its options are valid.
///
/// ```
/// use lock_core::http::keyed::{HttpKeyedLock, KeySource};
/// use lock_core::{LockClient, MemoryBackend};
///
/// let locks = LockClient::new(MemoryBackend::new());
/// let built: HttpKeyedLock<KeySource> = HttpKeyedLock::builder(locks, KeySource::path_index(1))
///     .key_prefix("sku:")
///     .build()
///     .unwrap();
/// assert_eq!(built.options().lock_key("1"), "sku:1");
/// let (_client, _source, _options) = built.into_parts();
/// ```
pub struct HttpKeyedLock<K> {
    client: LockClient,
    extractor: K,
    options: KeyedLockOptions,
}

impl<K> HttpKeyedLock<K> {
    /// Settings over `client`, with keys from `extractor` and the default options.
    pub fn builder(client: LockClient, extractor: K) -> HttpKeyedLockBuilder<K> {
        HttpKeyedLockBuilder::new(client, extractor)
    }

    /// The lock client.
    #[must_use]
    pub fn client(&self) -> &LockClient {
        &self.client
    }

    /// Where each request's key comes from.
    #[must_use]
    pub fn extractor(&self) -> &K {
        &self.extractor
    }

    /// The options, valid.
    pub fn options(&self) -> &KeyedLockOptions {
        &self.options
    }

    /// The client, the extractor and the options, for an adapter to keep as it needs.
    pub fn into_parts(self) -> (LockClient, K, KeyedLockOptions) {
        (self.client, self.extractor, self.options)
    }
}

impl<K> fmt::Debug for HttpKeyedLock<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpKeyedLock")
            .field("client", &self.client)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// An adapter's check of a key source when its settings are built
/// ([`HttpKeyedLockBuilder::checked_by`]).
pub type SourceCheck<K> = fn(&K) -> Result<(), LockError>;

/// The settings of a keyed-lock middleware: the builder of both adapters
/// (`lock_tower::KeyedLockLayer::builder`, `lock_actix::KeyedLock::builder`), so they take the
/// same settings. Each method is the [`KeyedLockOptions`] method of the same name;
/// [`build`](Self::build) checks them all ([`KeyedLockOptions::validate`]) and makes a `T`: an
/// [`HttpKeyedLock`], or an adapter's middleware (any `T: From<HttpKeyedLock<K>>`).
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::keyed::{BusyStatus, HttpKeyedLock, KeySource};
/// use lock_core::{LockClient, MemoryBackend, WaitPolicy};
///
/// let locks = LockClient::new(MemoryBackend::new());
/// let built = HttpKeyedLock::builder(locks.clone(), KeySource::header("x-sku"))
///     .wait(WaitPolicy::Within(Duration::from_secs(2)))
///     .busy_status(BusyStatus::TooManyRequests)
///     .methods(["POST"])
///     .build();
/// assert!(built.is_ok());
/// let refused = HttpKeyedLock::builder(locks, KeySource::header("x-sku")).methods([""]).build();
/// assert!(refused.is_err());
/// ```
#[must_use]
pub struct HttpKeyedLockBuilder<K, T = HttpKeyedLock<K>> {
    client: LockClient,
    extractor: K,
    options: KeyedLockOptions,
    /// The adapter's check of the key source ([`checked_by`](Self::checked_by)).
    check: Option<SourceCheck<K>>,
    // `fn() -> T`: the builder makes a `T`, it holds none (and stays `Send + Sync`).
    output: PhantomData<fn() -> T>,
}

impl<K, T> HttpKeyedLockBuilder<K, T> {
    /// Settings over `client`, with keys from `extractor` and the default options.
    pub fn new(client: LockClient, extractor: K) -> Self {
        Self {
            client,
            extractor,
            options: KeyedLockOptions::default(),
            check: None,
            output: PhantomData,
        }
    }

    fn change(mut self, change: impl FnOnce(KeyedLockOptions) -> KeyedLockOptions) -> Self {
        self.options = change(self.options);
        self
    }

    /// See [`KeyedLockOptions::wait`] (default `WaitPolicy::Try`).
    pub fn wait(self, wait: WaitPolicy) -> Self {
        self.change(|o| o.wait(wait))
    }

    /// See [`KeyedLockOptions::lease`].
    pub fn lease(self, lease: LeaseMode) -> Self {
        self.change(|o| o.lease(lease))
    }

    /// See [`KeyedLockOptions::busy_status`] (default 409).
    pub fn busy_status(self, status: BusyStatus) -> Self {
        self.change(|o| o.busy_status(status))
    }

    /// See [`KeyedLockOptions::retry_after`].
    pub fn retry_after(self, after: Duration) -> Self {
        self.change(|o| o.retry_after(after))
    }

    /// See [`KeyedLockOptions::on_lost`] (default: cancel the handler, answer 503).
    pub fn on_lost(self, on_lost: OnLost) -> Self {
        self.change(|o| o.on_lost(on_lost))
    }

    /// See [`KeyedLockOptions::key_prefix`].
    pub fn key_prefix(self, prefix: impl Into<String>) -> Self {
        self.change(|o| o.key_prefix(prefix))
    }

    /// See [`KeyedLockOptions::methods`] (default: every method).
    pub fn methods<I, S>(self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.change(|o| o.methods(methods))
    }

    /// See [`KeyedLockOptions::path_prefix`] (default: every path).
    pub fn path_prefix(self, prefix: impl Into<String>) -> Self {
        self.change(|o| o.path_prefix(prefix))
    }

    /// See [`KeyedLockOptions::applies_to`].
    pub fn applies_to(self, rule: AppliesTo) -> Self {
        self.change(|o| o.applies_to(rule))
    }

    /// See [`KeyedLockOptions::expose_errors`] (default off).
    pub fn expose_errors(self, expose: bool) -> Self {
        self.change(|o| o.expose_errors(expose))
    }

    /// Replaces every setting above at once (options shared with another middleware, say).
    pub fn options(self, options: KeyedLockOptions) -> Self {
        self.change(|_| options)
    }

    /// For adapters: `check` runs on the key source when the settings are built, so a source
    /// the adapter cannot serve (lock-tower's route parameters without its `axum` feature)
    /// fails [`build`](Self::build) with a message naming the fix, not every request.
    ///
    /// ```
    /// use lock_core::http::keyed::{HttpKeyedLock, KeySource};
    /// use lock_core::{LockClient, LockError, MemoryBackend};
    ///
    /// fn no_routes(source: &KeySource) -> Result<(), LockError> {
    ///     match source.route_param_name() {
    ///         Some(name) => Err(LockError::InvalidConfig(format!("no router here for `{name}`"))),
    ///         None => Ok(()),
    ///     }
    /// }
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let built = HttpKeyedLock::builder(locks, KeySource::route_param("sku"))
    ///     .checked_by(no_routes)
    ///     .build();
    /// assert!(built.unwrap_err().to_string().contains("`sku`"));
    /// ```
    pub fn checked_by(mut self, check: SourceCheck<K>) -> Self {
        self.check = Some(check);
        self
    }

    /// The `T`, or the first invalid setting (an empty or malformed method, a key prefix with
    /// NUL or too long, a lease or `Retry-After` out of bounds, a key source the adapter's
    /// [check](Self::checked_by) refuses).
    pub fn build(self) -> Result<T, LockError>
    where
        T: From<HttpKeyedLock<K>>,
    {
        self.options.validate()?;
        if let Some(check) = self.check {
            check(&self.extractor)?;
        }
        Ok(T::from(HttpKeyedLock {
            client: self.client,
            extractor: self.extractor,
            options: self.options,
        }))
    }
}

impl<K: Clone, T> Clone for HttpKeyedLockBuilder<K, T> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            extractor: self.extractor.clone(),
            options: self.options.clone(),
            check: self.check,
            output: PhantomData,
        }
    }
}

impl<K, T> fmt::Debug for HttpKeyedLockBuilder<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpKeyedLockBuilder")
            .field("client", &self.client)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::keyed::KeySource;
    use crate::MemoryBackend;

    /// An adapter's middleware, as the adapters write one.
    struct Middleware(KeyedLockOptions);

    impl From<HttpKeyedLock<KeySource>> for Middleware {
        fn from(built: HttpKeyedLock<KeySource>) -> Self {
            Self(built.into_parts().2)
        }
    }

    fn builder() -> HttpKeyedLockBuilder<KeySource, Middleware> {
        HttpKeyedLockBuilder::new(
            LockClient::new(MemoryBackend::new()),
            KeySource::path_index(0),
        )
    }

    #[test]
    fn the_methods_forward_to_the_options() {
        let Middleware(options) = builder()
            .wait(WaitPolicy::Within(Duration::from_secs(2)))
            .lease(LeaseMode::watchdog(Duration::from_secs(10)))
            .busy_status(BusyStatus::TooManyRequests)
            .retry_after(Duration::from_millis(1500))
            .on_lost(OnLost::Continue)
            .key_prefix("sku:")
            .methods(["post"])
            .path_prefix("/buy")
            .expose_errors(true)
            .build()
            .unwrap();
        assert_eq!(options.lock_key("1"), "sku:1");
        assert_eq!(options.retry_after_secs(), 2);
        assert!(options.applies("POST", "/buy/1") && !options.applies("GET", "/buy/1"));
        assert!(options.exposes_errors());
        let debug = format!("{options:?}");
        for part in ["Within(2s)", "TooManyRequests", "Continue"] {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
        let Middleware(replaced) = builder()
            .methods([""])
            .options(KeyedLockOptions::new())
            .build()
            .unwrap();
        assert!(replaced.applies("DELETE", "/"));
        let anywhere = AppliesTo::default().method("PUT");
        let Middleware(rule) = builder().applies_to(anywhere).build().unwrap();
        assert!(rule.applies("PUT", "/x") && !rule.applies("POST", "/x"));
    }

    #[test]
    fn invalid_settings_are_refused() {
        assert!(builder().methods(["PO ST"]).build().is_err());
        assert!(builder().key_prefix("a\0").build().is_err());
        assert!(builder().retry_after(Duration::ZERO).build().is_err());
        assert!(builder()
            .lease(LeaseMode::fixed(Duration::from_millis(1)))
            .build()
            .is_err());
    }
}
