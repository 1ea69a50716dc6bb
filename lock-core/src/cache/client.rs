//! The cache users hold, and the builder it is made with.

use std::sync::Arc;
use std::time::Duration;

use super::flight::Flights;
use super::request::CacheRequest;
use super::{Freshness, OnBackendError, OnWaitTimeout};
use crate::backend::key::validate_namespace;
use crate::backend::HolderLabel;
use crate::backend::{DynLockBackend, LockBackend};
use crate::operator::LockAdmin;
use crate::results::{DynResultStore, ResultStore};
use crate::{LeaseMode, LockClient, LockError, Result};

/// The largest value stored by default: 1 MiB.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 1 << 20;

/// How long a caller waits for another's computation by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The lease a computation holds by default: 750 ms, renewed every third of it (250 ms)
/// while the computation runs. A computing process that dies frees its key within 750 ms, and
/// one waiter takes over (a computation of 4 s is stored again under 5 s after the kill); each
/// key being computed costs four renewals a second.
pub const DEFAULT_COMPUTE_LEASE: LeaseMode = LeaseMode::watchdog(Duration::from_millis(750));

/// A stampede-proof cache: on a miss, exactly one caller across all instances computes the
/// value, under a fenced lease; the others are handed the value by push when it is stored.
/// Cheap to clone; clones share everything.
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{Cache, CacheStatus};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cache = Cache::memory("shop")?;
/// let price = cache
///     .entry("price:42")
///     .fresh_for(Duration::from_secs(60))
///     .stale_while_revalidate(Duration::from_secs(300))
///     .try_get_with(|| async { Ok::<_, std::io::Error>(b"9.99".to_vec()) })
///     .await?;
/// assert_eq!(price.status, CacheStatus::Computed);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Cache {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn DynResultStore>,
    /// Leases for computations, on the caller's backend, under `cache.<namespace>`.
    pub(crate) locks: LockClient,
    pub(crate) namespace: String,
    pub(crate) freshness: Freshness,
    pub(crate) wait: Duration,
    pub(crate) on_wait_timeout: OnWaitTimeout,
    pub(crate) on_backend_error: OnBackendError,
    pub(crate) max_value_bytes: usize,
    pub(crate) flights: Arc<Flights>,
    /// On Redis, with the store on the lease's own backend: the miss's lease and its second
    /// read in one script.
    pub(crate) fused: Option<super::fused_lease::FusedLease>,
}

impl Cache {
    /// Starts configuring a cache whose values live in `store` and whose computations are
    /// leased on `backend` (the same server, usually: a `RedisResultStore` with a
    /// `RedisBackend`, feature `redis`).
    pub fn builder(store: impl ResultStore, backend: impl LockBackend) -> CacheBuilder {
        CacheBuilder {
            fused: super::fused_lease::FusedLease::offered(&store, &backend),
            store: Arc::new(store),
            backend: Arc::new(backend),
            namespace: String::new(),
            freshness: Freshness::fresh_for(Duration::from_secs(60)),
            wait: DEFAULT_WAIT,
            on_wait_timeout: OnWaitTimeout::default(),
            on_backend_error: OnBackendError::default(),
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            lease: DEFAULT_COMPUTE_LEASE,
            label: None,
        }
    }

    /// Starts a call for the value named `key` (validated when the call runs, with the lock's
    /// key rules).
    pub fn entry(&self, key: impl Into<String>) -> CacheRequest<'_> {
        CacheRequest::new(self, key.into())
    }

    /// Deletes the stored value of `key` (after the data behind it changed, say): the next
    /// call computes it anew, once across the callers missing it then. A computation already
    /// running stores its value when it ends.
    ///
    /// ```
    /// use lock_core::cache::{Cache, CacheStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let cache = Cache::memory("shop")?;
    /// let load = || async { Ok::<_, std::io::Error>(b"lamp".to_vec()) };
    /// cache.entry("product:1").try_get_with(load).await?;
    /// cache.invalidate("product:1").await?;
    /// let again = cache.entry("product:1").try_get_with(load).await?;
    /// assert_eq!(again.status, CacheStatus::Computed);
    /// # Ok(()) }
    /// ```
    pub async fn invalidate(&self, key: &str) -> Result<()> {
        let key = crate::LockKey::new(&self.inner.namespace, key)?;
        self.inner.store.remove(&key).await
    }

    /// The namespace every key is placed under.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// The freshness used when a call names none.
    #[must_use]
    pub fn default_freshness(&self) -> Freshness {
        self.inner.freshness
    }

    /// The store's name (`"memory"`, `"redis"`).
    #[must_use]
    pub fn store_name(&self) -> &'static str {
        self.inner.store.name()
    }

    /// The operator's view of this cache's computations in flight. Each computation holds a
    /// lease on its key, in the lock namespace `cache.<namespace>` of the cache's backend:
    /// [`LockAdmin::list`] gives the keys being computed now, by which instance (its
    /// [label](CacheBuilder::label)) and for how long; [`LockAdmin::force_release`] ends a
    /// stuck one (its waiters go on; a late store of the released computation is refused by
    /// its fencing token).
    ///
    /// ```
    /// use lock_core::cache::Cache;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let cache = Cache::memory("products")?;
    /// let page = cache.admin().list("", None, 100).await?;
    /// assert!(page.keys.is_empty(), "nothing is being computed");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn admin(&self) -> LockAdmin {
        self.inner.locks.admin()
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("store", &self.inner.store.name())
            .field("namespace", &self.inner.namespace)
            .field("freshness", &self.inner.freshness)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Cache`].
#[must_use]
pub struct CacheBuilder {
    fused: Option<super::fused_lease::FusedLease>,
    store: Arc<dyn DynResultStore>,
    backend: Arc<dyn DynLockBackend>,
    namespace: String,
    freshness: Freshness,
    wait: Duration,
    on_wait_timeout: OnWaitTimeout,
    on_backend_error: OnBackendError,
    max_value_bytes: usize,
    lease: LeaseMode,
    label: Option<HolderLabel>,
}

impl CacheBuilder {
    /// Places every key under `namespace` (ASCII letters, digits, `-`, `_`, `.`; at most 58 bytes,
    /// as the computations' leases go under `cache.<namespace>`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The freshness used when a call names none (default: fresh for 60 s, nothing else).
    pub fn freshness(mut self, freshness: Freshness) -> Self {
        self.freshness = freshness;
        self
    }

    /// How long a caller waits for another's computation (default 10 s), and what it does then.
    pub fn wait(mut self, wait: Duration, then: OnWaitTimeout) -> Self {
        self.wait = wait;
        self.on_wait_timeout = then;
        self
    }

    /// What to do when the backend cannot be reached (default: fail open).
    pub fn on_backend_error(mut self, policy: OnBackendError) -> Self {
        self.on_backend_error = policy;
        self
    }

    /// The largest value stored (default 1 MiB); a larger one is a
    /// [`CacheError::TooLarge`](super::CacheError::TooLarge).
    pub fn max_value_bytes(mut self, limit: usize) -> Self {
        self.max_value_bytes = limit;
        self
    }

    /// The lease a computation holds (default [`DEFAULT_COMPUTE_LEASE`]: 750 ms, renewed while
    /// it computes). It bounds how long a computing process that died blocks its key: the
    /// callers waiting for it take over once the lease runs out. A longer lease costs fewer
    /// renewals and blocks longer; a computation whose lease is lost anyway (a process paused
    /// past it) still cannot overwrite what the caller that took over stored.
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.lease = lease;
        self
    }

    /// Who this instance is, shown to operators beside each computation it runs (default:
    /// host, pid and program, as [`HolderLabel::from_process`]).
    pub fn label(mut self, label: HolderLabel) -> Self {
        self.label = Some(label);
        self
    }

    /// Checks the settings and builds the cache.
    pub fn build(self) -> Result<Cache> {
        validate_namespace(&self.namespace)?;
        let lock_namespace = if self.namespace.is_empty() {
            "cache".to_owned()
        } else {
            format!("cache.{}", self.namespace)
        };
        let freshness = self.freshness.validate()?;
        super::policy::validate_wait("cache wait", self.wait)?;
        if self.max_value_bytes == 0 {
            return Err(LockError::InvalidConfig(
                "the cache's max value size must be positive".into(),
            ));
        }
        // Each key's fencing state goes with its lease, or with its entry: `keep_fence_for`
        // after a store (see `call/compute.rs`), so keys made up by requests leave nothing for
        // long.
        let mut locks = LockClient::parts_builder(self.backend, lock_namespace, self.lease)
            .fence_retention(self.lease.ttl());
        if let Some(label) = self.label {
            locks = locks.label(label);
        }
        let locks = locks.build()?;
        Ok(Cache {
            inner: Arc::new(Inner {
                store: self.store,
                locks,
                namespace: self.namespace,
                freshness,
                wait: self.wait,
                on_wait_timeout: self.on_wait_timeout,
                on_backend_error: self.on_backend_error,
                max_value_bytes: self.max_value_bytes,
                flights: Arc::default(),
                fused: self.fused,
            }),
        })
    }
}
