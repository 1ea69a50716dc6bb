//! The client users hold: a backend, a namespace and the re-entrant holds of this process.
//! Every way into the store starts here: the lock, the fair lock, the read-write lock, the
//! semaphore and the latch (the last three are types of [`primitives`](crate::primitives)),
//! and the process-wide default client.

use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Capabilities, DynLockBackend, LeaseKind, LockBackend};
use std::sync::OnceLock;

use crate::lock::client_builder::LockClientBuilder;
use crate::lock::held::HeldRegistry;
use crate::lock::request::LockRequest;
use crate::lock::shutdown::LiveLeases;
use crate::lock::watchdog::Watchdog;
use crate::{CountDownLatch, LeaseMode, LockError, LockKey, ReadWriteLock, Result, Semaphore};

/// The process-wide default client ([`LockClient::install_global`]), for code that cannot be
/// handed one (the `#[distributed_lock]` attribute without `client = ...`).
static GLOBAL: OnceLock<LockClient> = OnceLock::new();

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
///     .lease(lock_core::LeaseMode::fixed(Duration::from_secs(10)))
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
    /// See [`LockClientBuilder::label`].
    pub(crate) label: crate::backend::HolderLabel,
    pub(crate) held: HeldRegistry,
    /// Every lease held, for [`LockClient::shutdown`].
    pub(crate) live: LiveLeases,
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
                label: crate::lock::client_builder::process_label(),
                held: HeldRegistry::default(),
                live: LiveLeases::default(),
                watchdog: Arc::default(),
            }),
        }
    }

    /// Starts configuring a client on `backend`.
    pub fn builder(backend: impl LockBackend) -> LockClientBuilder {
        LockClientBuilder::new(Arc::new(backend), String::new(), LeaseMode::default())
    }

    /// Starts a request for the lock named `key` (validated when the request runs).
    pub fn lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into())
    }

    /// Starts a request for the fair lock named `key`: waiters are served strictly in the
    /// order they arrived, and a newcomer never takes it while others wait (no barging), so
    /// every waiter gets its turn. On Redis the release hands the lock to the next waiter
    /// inside the release itself: the waiter wakes up holding it.
    ///
    /// A fair lock is its own lock: `fair_lock("k")` and [`lock("k")`](Self::lock) do not
    /// exclude each other. Everything else is the lock's: the returned [`LockRequest`], the
    /// [`LockGuard`](crate::LockGuard), reentrancy, fencing tokens and `lost()`. The backend
    /// must offer it ([`Primitives::fair`](crate::backend::Primitives::fair)); otherwise
    /// [`LockError::Unsupported`](crate::LockError::Unsupported).
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// let turn = locks.fair_lock("printer").await?;
    /// // ... print, fenced with turn.fencing_token() ...
    /// turn.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn fair_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::of_kind(self, key.into(), LeaseKind::Fair)
    }

    /// A request for a lease of `kind` on `key` (the primitives build on it).
    pub(crate) fn lock_of_kind(&self, key: String, kind: LeaseKind) -> LockRequest<'_> {
        LockRequest::of_kind(self, key, kind)
    }

    /// The backend as an [`ElectionBackend`](crate::backend::ElectionBackend), if it is one.
    pub(crate) fn election_backend(&self) -> Option<&dyn crate::backend::DynElectionBackend> {
        self.inner.backend.optional_traits().election
    }

    /// The read-write lock named `name` (validated when a side of it is acquired). The backend
    /// must offer it ([`Primitives::read_write`](crate::backend::Primitives::read_write)).
    pub fn read_write_lock(&self, name: impl Into<String>) -> ReadWriteLock {
        ReadWriteLock::new(self.clone(), name.into())
    }

    /// The semaphore named `name`, of `permits` permits unless the store already has a size
    /// for it. The backend must offer it
    /// ([`Primitives::semaphore`](crate::backend::Primitives::semaphore)).
    pub fn semaphore(&self, name: impl Into<String>, permits: u32) -> Semaphore {
        Semaphore::new(self.clone(), name.into(), permits)
    }

    /// The count-down latch named `name`. The backend must offer it
    /// ([`Primitives::latch`](crate::backend::Primitives::latch)).
    pub fn latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch::new(self.clone(), name.into())
    }

    /// Installs `self` as the process-wide default client, once, at startup. Installing a second
    /// time is refused with [`LockError::InvalidConfig`] (the first stays).
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// LockClient::new(MemoryBackend::new()).install_global().unwrap();
    /// assert!(LockClient::global().is_ok());
    /// assert!(LockClient::new(MemoryBackend::new()).install_global().is_err());
    /// ```
    pub fn install_global(self) -> Result<()> {
        GLOBAL.set(self).map_err(|_| {
            LockError::InvalidConfig("a global lock client is already installed".into())
        })
    }

    /// The process-wide default client; [`LockError::InvalidConfig`] until one is installed
    /// with [`install_global`](Self::install_global).
    pub fn global() -> Result<&'static LockClient> {
        GLOBAL.get().ok_or_else(|| {
            LockError::InvalidConfig(
                "no global lock client installed; call LockClient::install_global at startup \
                 or pass `client = ...` to #[distributed_lock]"
                    .into(),
            )
        })
    }

    /// What the backend can do.
    #[must_use]
    pub fn capabilities(&self) -> Capabilities {
        self.inner.backend.capabilities()
    }

    /// Who this client's leases say they belong to (see [`LockClientBuilder::label`]).
    #[must_use]
    pub fn label(&self) -> &crate::backend::HolderLabel {
        &self.inner.label
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
        let Some(queues) = self.inner.backend.optional_traits().queue else {
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
    /// The builder of a client on a shared backend with its own namespace and default lease,
    /// checked as [`LockClientBuilder::build`] checks them (for the cache and idempotency,
    /// built on the lock).
    pub(crate) fn parts_builder(
        backend: Arc<dyn DynLockBackend>,
        namespace: String,
        default_lease: LeaseMode,
    ) -> LockClientBuilder {
        LockClientBuilder::new(backend, namespace, default_lease)
    }
}
