//! The client users hold: a backend, a namespace and the re-entrant holds of this process.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Capabilities, DynLockBackend, LeaseKind, LockBackend};
use crate::lease::{MAX_LEASE_TTL, MIN_LEASE_TTL};
use crate::lock::held::HeldRegistry;
use crate::lock::key::validate_namespace;
use crate::lock::request::LockRequest;
use crate::lock::watchdog::Watchdog;
use crate::{LeaseMode, LockError, LockKey, Result};

/// A handle to distributed locks on one backend. Cheap to clone; clones share everything.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::builder(MemoryBackend::new()).namespace("shop").build()?;
///
/// // Wait as long as it takes:
/// let guard = locks.lock("sku:42").await?;
/// // Do not wait: a busy lock is `None`.
/// let other_task = tokio::spawn({
///     let locks = locks.clone();
///     async move { locks.lock("sku:42").try_acquire().await }
/// });
/// assert!(other_task.await.unwrap()?.is_none());
/// guard.release().await?;
///
/// // Wait up to 3 s, on a fixed 10 s lease the watchdog does not renew:
/// let guard = locks
///     .lock("sku:42")
///     .fixed_ttl(Duration::from_secs(10))
///     .acquire_within(Duration::from_secs(3))
///     .await?
///     .expect("free again");
/// # drop(guard);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LockClient {
    pub(crate) inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) backend: Arc<dyn DynLockBackend>,
    pub(crate) namespace: String,
    pub(crate) default_lease: LeaseMode,
    /// See [`LockClientBuilder::fence_retention`].
    pub(crate) fence_retention: Option<Duration>,
    pub(crate) held: HeldRegistry,
    pub(crate) watchdog: Arc<Watchdog>,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.watchdog.close();
    }
}

impl LockClient {
    /// A client on `backend` with no namespace and the default watchdog lease.
    pub fn new(backend: impl LockBackend) -> Self {
        Self::from_dyn(Arc::new(backend))
    }

    /// A client on a backend already held as a trait object (as middleware holds it).
    #[must_use]
    pub fn from_dyn(backend: Arc<dyn DynLockBackend>) -> Self {
        Self {
            inner: Arc::new(ClientInner {
                backend,
                namespace: String::new(),
                default_lease: LeaseMode::default(),
                fence_retention: None,
                held: HeldRegistry::default(),
                watchdog: Arc::default(),
            }),
        }
    }

    /// Starts configuring a client on `backend`.
    pub fn builder(backend: impl LockBackend) -> LockClientBuilder {
        LockClientBuilder {
            backend: Arc::new(backend),
            namespace: String::new(),
            default_lease: LeaseMode::default(),
            fence_retention: None,
        }
    }

    /// Starts a request for the lock named `key` (validated when the request runs).
    pub fn lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into())
    }

    /// What the backend can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        self.inner.backend.capabilities()
    }

    /// The namespace every key is placed under (empty when none).
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// How many acquisitions of `kind` wait for `key` in the store right now, across every
    /// process (for monitoring and tests). Memory, Redis, ZooKeeper and etcd keep their queues
    /// in the store and answer ([`QueueBackend`](crate::backend::QueueBackend)); PostgreSQL and
    /// MySQL keep none (their waiters wait in their own process: see
    /// `PostgresBackend::waiters`) and answer
    /// [`LockError::Unsupported`](crate::LockError::Unsupported).
    ///
    /// ```
    /// use lock_core::backend::LeaseKind;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// assert_eq!(locks.queue_length(LeaseKind::Fair, "printer").await?, 0);
    /// # Ok(()) }
    /// ```
    pub async fn queue_length(&self, kind: LeaseKind, key: &str) -> Result<usize> {
        let key = LockKey::new(&self.inner.namespace, key)?;
        let Some(queues) = self.inner.backend.as_queue_backend() else {
            // Not "no lock": the backend may well offer the kind, only not a queue to count.
            return Err(LockError::Unsupported {
                backend: self.capabilities().backend,
                primitive: "waiter queue in the store",
            });
        };
        queues.queue_length(&key, kind).await
    }

    /// The [circuit breaker](crate::breaker) of the backend's server connection (`None` for
    /// the memory backend, which cannot be unreachable): its
    /// [`state`](crate::breaker::Breaker::state) says whether calls go through.
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// assert!(LockClient::new(MemoryBackend::new()).breaker().is_none());
    /// ```
    #[must_use]
    pub fn breaker(&self) -> Option<&crate::breaker::Breaker> {
        self.inner.backend.breaker()
    }

    /// How many distinct leases this client's owners hold right now.
    #[must_use]
    pub fn held_leases(&self) -> usize {
        self.inner.held.len()
    }
}

impl std::fmt::Debug for LockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockClient")
            .field("backend", &self.capabilities().backend)
            .field("namespace", &self.inner.namespace)
            .field("default_lease", &self.inner.default_lease)
            .finish_non_exhaustive()
    }
}

impl LockClient {
    /// A client on a shared backend with its own namespace and default lease, checked as
    /// [`LockClientBuilder::build`] checks them (for primitives built on the lock).
    pub(crate) fn from_parts(
        backend: Arc<dyn DynLockBackend>,
        namespace: String,
        default_lease: LeaseMode,
    ) -> Result<Self> {
        Self::parts_builder(backend, namespace, default_lease).build()
    }

    /// The builder [`from_parts`](Self::from_parts) builds, for more settings.
    pub(crate) fn parts_builder(
        backend: Arc<dyn DynLockBackend>,
        namespace: String,
        default_lease: LeaseMode,
    ) -> LockClientBuilder {
        LockClientBuilder {
            backend,
            namespace,
            default_lease,
            fence_retention: None,
        }
    }
}

/// Configures a [`LockClient`].
#[must_use]
pub struct LockClientBuilder {
    backend: Arc<dyn DynLockBackend>,
    namespace: String,
    default_lease: LeaseMode,
    fence_retention: Option<Duration>,
}

impl LockClientBuilder {
    /// Places every key under `namespace` (`namespace:key`), so services sharing a backend do
    /// not collide. ASCII letters, digits, `-`, `_` and `.`, at most 64 bytes; empty (the default)
    /// is no namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The lease used when a request names none (default: a 30 s watchdog lease).
    pub fn default_lease(mut self, lease: LeaseMode) -> Self {
        self.default_lease = lease;
        self
    }

    /// How long after each grant, at least, the store keeps what makes the key's next fencing
    /// token larger (within `MIN_LEASE_TTL..=MAX_LEASE_TTL`; default: the backend's own, a
    /// day on Redis and PostgreSQL). For locks on keys that anonymous requests make up (a
    /// cache's URLs), so each leaves nothing behind for long: a Redis fencing counter expires
    /// this long after the last grant (or later: see [`LockGuard::keep_fence_for`]), a
    /// PostgreSQL lock row is swept this long after its lease ended (at the next sweep). A
    /// counter that is gone starts again from the server's clock, past every token it gave;
    /// what the retention adds is room for the server's clock to be stepped back meanwhile.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// let locks = LockClient::builder(MemoryBackend::new())
    ///     .fence_retention(Duration::from_secs(60))
    ///     .build();
    /// assert!(locks.is_ok());
    /// ```
    ///
    /// [`LockGuard::keep_fence_for`]: crate::LockGuard::keep_fence_for
    pub fn fence_retention(mut self, retention: Duration) -> Self {
        self.fence_retention = Some(retention);
        self
    }

    /// Checks the settings and builds the client.
    pub fn build(self) -> Result<LockClient> {
        validate_namespace(&self.namespace)?;
        self.default_lease.validate()?;
        if let Some(retention) = self.fence_retention {
            crate::lease::validate_ttl(retention).map_err(|_| LockError::InvalidDuration {
                what: "fence retention",
                reason: format!(
                    "{retention:?} is outside {:?}..={:?}",
                    MIN_LEASE_TTL, MAX_LEASE_TTL
                ),
            })?;
        }
        Ok(LockClient {
            inner: Arc::new(ClientInner {
                backend: self.backend,
                namespace: self.namespace,
                default_lease: self.default_lease,
                fence_retention: self.fence_retention,
                held: HeldRegistry::default(),
                watchdog: Arc::default(),
            }),
        })
    }
}
