//! One call for one value: its settings, checked and handed to the algorithm in `call.rs`.

use std::future::Future;
use std::time::Duration;

use super::call::Call;
use super::codec::{Bytes, Codec};
use super::computed::{Compute, Computed, Failure, Outcome, Typed};
use super::{Cache, CacheError, Cached, Freshness};
use crate::LockKey;

/// A cache call being configured; finish it with [`try_get_with`](Self::try_get_with), or
/// look the value up without computing it: [`get`](Self::get), [`insert`](Self::insert).
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{Cache, CacheStatus};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cache = Cache::memory("shop")?;
/// let name = cache
///     .entry("product:7:name")
///     .utf8()
///     .fresh_for(Duration::from_secs(30))
///     .negative_ttl(Duration::from_secs(5))
///     .try_get_with(|| async { Ok::<_, std::io::Error>("desk lamp".to_owned()) })
///     .await?;
/// assert_eq!(name.value, "desk lamp");
/// # Ok(()) }
/// ```
#[must_use = "a cache call does nothing until `try_get_with` is awaited"]
pub struct CacheRequest<'a, C = Bytes> {
    pub(super) cache: &'a Cache,
    pub(super) key: String,
    pub(super) freshness: Freshness,
    pub(super) wait: Duration,
    recompute: bool,
    pub(super) codec: C,
}

impl<'a> CacheRequest<'a, Bytes> {
    pub(crate) fn new(cache: &'a Cache, key: String) -> Self {
        Self {
            cache,
            key,
            freshness: cache.inner.freshness,
            wait: cache.inner.wait,
            recompute: false,
            codec: Bytes,
        }
    }
}

impl<'a, C> CacheRequest<'a, C> {
    /// Values of another type, through `codec`.
    pub fn codec<D>(self, codec: D) -> CacheRequest<'a, D> {
        CacheRequest {
            cache: self.cache,
            key: self.key,
            freshness: self.freshness,
            wait: self.wait,
            recompute: self.recompute,
            codec,
        }
    }

    /// `String` values, stored as UTF-8.
    pub fn utf8(self) -> CacheRequest<'a, super::Utf8> {
        self.codec(super::Utf8)
    }

    /// Any `serde` value, stored as JSON (feature `json`).
    #[cfg(feature = "json")]
    pub fn json(self) -> CacheRequest<'a, super::Json> {
        self.codec(super::Json)
    }

    /// The whole freshness policy for this call.
    pub fn freshness(mut self, freshness: Freshness) -> Self {
        self.freshness = freshness;
        self
    }

    /// How long a stored value is fresh.
    pub fn fresh_for(mut self, fresh: Duration) -> Self {
        self.freshness.fresh = fresh;
        self
    }

    /// Serves the value stale this long after it stops being fresh, while one refresh runs.
    pub fn stale_while_revalidate(mut self, window: Duration) -> Self {
        self.freshness.stale_while_revalidate = window;
        self
    }

    /// Serves the value stale this long after it stops being fresh when a refresh fails.
    pub fn stale_if_error(mut self, window: Duration) -> Self {
        self.freshness.stale_if_error = window;
        self
    }

    /// Remembers a failed computation this long (default: not at all).
    pub fn negative_ttl(mut self, ttl: Duration) -> Self {
        self.freshness.negative = ttl;
        self
    }

    /// Refreshes fresh values early (XFetch) with this β (1 is the paper's optimum).
    pub fn early_refresh(mut self, beta: f64) -> Self {
        self.freshness.early_refresh_beta = beta;
        self
    }

    /// Computes the value anew even if a fresh one is stored (an HTTP request's `no-cache`,
    /// say): still once across the callers recomputing at the same time, and with the stored
    /// value as the stale-if-error fallback. A value another caller stored after this call's
    /// read counts as the recomputed one.
    pub fn recompute(mut self) -> Self {
        self.recompute = true;
        self
    }

    /// Waits at most this long for another caller's computation (the cache's default else).
    pub fn wait_at_most(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The value: stored and fresh, or stale within stale-while-revalidate, or computed by
    /// `compute`, once across every caller of every instance missing it at the same time.
    ///
    /// `compute` runs only when this caller computes (a miss it leads, an expired wait, a
    /// background refresh it starts); it must own what it uses, as it may outlive the call.
    ///
    /// When it fails, this caller gets its error as it is ([`CacheError::Compute`]), unless
    /// other callers of this process were waiting for it: then each of them, this one
    /// included, gets the one error shared ([`CacheError::Shared`], an `Arc<E>`, as moka's
    /// `try_get_with` shares it). Callers it reaches only by its message (remembered for the
    /// negative TTL, pushed from another process) get [`CacheError::Elsewhere`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lock_core::cache::{Cache, CacheError};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum Origin { NotFound, Down }
    /// impl std::fmt::Display for Origin {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let cache = Cache::memory("shop")?;
    /// let failed = cache
    ///     .entry("product:404")
    ///     .try_get_with(|| async { Err::<Vec<u8>, _>(Origin::NotFound) })
    ///     .await;
    /// let not_found = match failed {
    ///     Err(CacheError::Compute(error)) => error == Origin::NotFound,
    ///     Err(CacheError::Shared(error)) => *error == Origin::NotFound,
    ///     _ => false,
    /// };
    /// assert!(not_found);
    /// # let _ = Origin::Down; let _: Option<Arc<Origin>> = None;
    /// # Ok(()) }
    /// ```
    pub async fn try_get_with<V, E, F, Fut>(self, compute: F) -> Result<Cached<V>, CacheError<E>>
    where
        C: Codec<V> + Clone,
        V: Send + 'static,
        E: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<V, E>> + Send + 'static,
    {
        let freshness = self.freshness;
        self.get_with(
            move || async move { compute().await.map(|value| (value, Some(freshness))) },
            Some(Typed::new()),
        )
        .await
    }

    /// As [`try_get_with`](Self::try_get_with), but a failed computation stays its caller's
    /// (`Compute`) whoever waited for it, and the callers that waited get its message
    /// (`Elsewhere`): `#[single_flight]`, whose fn returns its body's own error (an `Arc<E>`
    /// could not become its `E`).
    #[cfg(feature = "json")]
    pub(crate) async fn try_get_with_unshared_errors<V, E, F, Fut>(
        self,
        compute: F,
    ) -> Result<Cached<V>, CacheError<E>>
    where
        C: Codec<V> + Clone,
        V: Send + 'static,
        E: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<V, E>> + Send + 'static,
    {
        let freshness = self.freshness;
        self.get_with(
            move || async move { compute().await.map(|value| (value, Some(freshness))) },
            None,
        )
        .await
    }

    /// As [`try_get_with`](Self::try_get_with), but the computation decides how the value is
    /// kept: `Some(freshness)` stores it with that policy (an HTTP response's own
    /// `Cache-Control`, say), `None` neither stores nor shares it ([`CacheStatus::Uncacheable`](super::CacheStatus::Uncacheable)):
    /// callers that were waiting for it compute their own, and so do later callers, at once
    /// and without a lease, for the call's pass-through TTL ([`Freshness::pass_through`];
    /// 0 by default). The call's own freshness still decides how a stored value is served.
    /// A failure is handed on as [`try_get_with`](Self::try_get_with) hands it.
    pub async fn try_get_with_freshness<V, E, F, Fut>(
        self,
        compute: F,
    ) -> Result<Cached<V>, CacheError<E>>
    where
        C: Codec<V> + Clone,
        V: Send + 'static,
        E: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(V, Option<Freshness>), E>> + Send + 'static,
    {
        self.get_with(compute, Some(Typed::new())).await
    }

    /// The call with a computation of the caller's, its failure shared as `typed` says.
    async fn get_with<V, E, F, Fut>(
        self,
        compute: F,
        typed: Option<Typed<E>>,
    ) -> Result<Cached<V>, CacheError<E>>
    where
        C: Codec<V> + Clone,
        V: Send + 'static,
        E: std::fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(V, Option<Freshness>), E>> + Send + 'static,
    {
        let codec = self.codec.clone();
        let compute: Compute<E> = Box::new(move || {
            Box::pin(async move {
                let (value, keep) = compute().await.map_err(Failure::User)?;
                let keep = match keep.map(Freshness::validate).transpose() {
                    Ok(keep) => keep,
                    Err(error) => {
                        tracing::warn!(error = %error.with_causes(), "a computation's freshness is invalid; not storing its value");
                        None
                    }
                };
                let bytes = codec.encode(&value).map_err(Failure::Encode)?;
                Ok(match keep {
                    Some(keep) => Computed::Value(bytes, keep),
                    None => Computed::Unshared {
                        value: bytes,
                        mark: true,
                    },
                })
            })
        });
        let codec = self.codec.clone();
        let bytes = self
            .call(compute, typed)
            .await
            .map_err(|error| error.into_cache_error(typed))?;
        let value = codec
            .decode(&bytes.value)
            .map_err(CacheError::<E>::Decode)?;
        Ok(bytes.map(|_| value))
    }

    /// The call with a computation of the cache's own making (the response cache's, whose
    /// failures carry the response to replay), its outcome as the cache has it.
    #[cfg(feature = "http")]
    pub(crate) async fn computing<E>(self, compute: Compute<E>) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        self.call(compute, None).await
    }

    /// The call, its failure shared as `typed` says.
    async fn call<E>(self, compute: Compute<E>, typed: Option<Typed<E>>) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        let inner = &self.cache.inner;
        let key = LockKey::new(&inner.namespace, &self.key)?;
        let freshness = self.freshness.validate()?;
        super::policy::validate_wait("cache wait", self.wait)?;
        let call = Call {
            cache: self.cache.clone(),
            key,
            freshness,
            wait: self.wait,
            recompute: self.recompute,
        };
        let ran = call.run(compute, typed).await;
        let (result, computed_in) = super::computed::metric(&ran);
        crate::cache::metrics::cache_call(&inner.namespace, result, computed_in);
        ran
    }
}
