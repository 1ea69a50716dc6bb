//! The backend trait family: what a store must do to hold leases for [`LockClient`].
//!
//! A backend only grants, renews and releases single leases, each named by a random
//! [`OwnerToken`]. Everything above that (reentrancy, the watchdog, the lost signal, key
//! validation, tracing) lives once in [`LockClient`], so every backend behaves alike.
//!
//! Waiting belongs to the backend, because that is where the shapes differ: Redis waits on a
//! queue plus pub/sub wake-ups, a ZooKeeper or etcd lock enqueues a node and watches only its
//! predecessor, a SQL lock listens for notifications or polls. A backend gets the caller's
//! deadline and must leave nothing behind when its future is dropped mid-wait.
//!
//! The primitives beyond the lock are kinds of lease ([`LeaseKind`]): a fair lock's turn, a
//! read or write share of a read-write lock, a semaphore's permits. They are granted by the
//! same [`acquire`](LockBackend::acquire) and kept by the same renew and release, so the
//! client's watchdog, lost signal, reentrancy and clean-up serve them all unchanged; a backend
//! says which kinds it offers in [`Capabilities::primitives`] and answers
//! [`LockError::Unsupported`] for the others. The count-down latch holds no lease: it is the
//! `latch_*` methods. The client refuses what a backend lacks before calling it.
//!
//! Implement [`LockBackend`] (async fns, no boxing); [`LockClient`] holds it as
//! `Arc<dyn DynLockBackend>`, which every `LockBackend` is through a blanket impl.
//!
//! [`LockClient`]: crate::LockClient

#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod expiry;
#[cfg(any(feature = "etcd", feature = "postgres", feature = "mysql"))]
pub(crate) mod in_flight;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod queue_rule;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::breaker::Breaker;
use crate::{FencingToken, LockError, LockKey, LossSignal, OwnerToken, Result};

/// A boxed, `Send` future, as the object-safe traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a backend can do; the conformance suite skips exactly what a backend says it cannot.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// let caps = LockClient::new(MemoryBackend::new()).capabilities();
/// assert_eq!(caps.backend, "memory");
/// assert!(caps.push_wakeups && caps.lease_expiry && !caps.cross_process);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// The backend's name, used in errors and metrics.
    pub backend: &'static str,
    /// Locks exclude holders in other processes (false only for the in-process memory backend).
    pub cross_process: bool,
    /// A release wakes a waiter by push, not only by polling.
    pub push_wakeups: bool,
    /// A holder that stops renewing (crashed, paused) loses the lock when its TTL runs out.
    pub lease_expiry: bool,
    /// The backend itself reports some losses (session end, delete) as they happen, before the
    /// next renewal would find out.
    pub loss_push: bool,
    /// The primitives beyond the lock that this backend offers.
    pub primitives: Primitives,
}

/// Which primitives beyond the lock a backend offers (see [`Capabilities::primitives`]).
///
/// ```
/// use lock_core::backend::Primitives;
///
/// let all = Primitives::ALL;
/// assert!(all.fair && all.read_write && all.semaphore && all.latch);
/// assert!(!Primitives::NONE.fair);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Primitives {
    /// [`LeaseKind::Fair`]: strict FIFO, no barging.
    pub fair: bool,
    /// [`LeaseKind::Read`] and [`LeaseKind::Write`].
    pub read_write: bool,
    /// [`LeaseKind::Permits`], [`LockBackend::set_permits`] and
    /// [`LockBackend::semaphore_state`].
    pub semaphore: bool,
    /// The `latch_*` methods.
    pub latch: bool,
}

impl Primitives {
    /// The lock only.
    pub const NONE: Self = Self {
        fair: false,
        read_write: false,
        semaphore: false,
        latch: false,
    };
    /// Every primitive.
    pub const ALL: Self = Self {
        fair: true,
        read_write: true,
        semaphore: true,
        latch: true,
    };

    /// Whether leases of `kind` are offered.
    ///
    /// ```
    /// use lock_core::backend::{LeaseKind, Primitives};
    ///
    /// assert!(Primitives::NONE.offers(LeaseKind::Exclusive));
    /// assert!(!Primitives::NONE.offers(LeaseKind::Read));
    /// ```
    #[must_use]
    pub fn offers(self, kind: LeaseKind) -> bool {
        match kind {
            LeaseKind::Exclusive => true,
            LeaseKind::Fair => self.fair,
            LeaseKind::Read | LeaseKind::Write => self.read_write,
            LeaseKind::Permits { .. } => self.semaphore,
        }
    }
}

/// What a lease grants. Each kind is its own primitive in the store: a fair lock, a
/// read-write lock and a semaphore named `"k"` are three different things, and none of them
/// is the lock `"k"`.
///
/// ```
/// use lock_core::backend::LeaseKind;
///
/// assert_eq!(LeaseKind::Permits { count: 2, limit: 5 }.name(), "semaphore");
/// assert!(LeaseKind::Write.is_exclusive());
/// assert!(!LeaseKind::Read.is_exclusive());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseKind {
    /// The lock: one holder; a release wakes the longest waiter, which may lose the race to a
    /// newcomer (and then keeps its place at the front).
    Exclusive,
    /// A fair lock: one holder, granted in arrival order; a newcomer never takes it while
    /// others wait.
    Fair,
    /// A read share of a read-write lock: many readers together, no writer. A waiting writer
    /// blocks newer readers.
    Read,
    /// The write side of a read-write lock: one writer, no readers.
    Write,
    /// `count` permits of a semaphore; `limit` is the number of permits to start from when the
    /// store has none set yet ([`LockBackend::set_permits`] changes it).
    Permits {
        /// Permits this lease holds (at least 1).
        count: u32,
        /// The semaphore's size if the store has none yet.
        limit: u32,
    },
}

impl LeaseKind {
    /// The primitive's name, for errors, tracing and metrics.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Exclusive => "lock",
            Self::Fair => "fair lock",
            Self::Read => "read lock",
            Self::Write => "write lock",
            Self::Permits { .. } => "semaphore",
        }
    }

    /// True for the kinds with a single holder (lock, fair lock, write lock).
    #[must_use]
    pub fn is_exclusive(self) -> bool {
        matches!(self, Self::Exclusive | Self::Fair | Self::Write)
    }

    /// The error a backend gives for a kind it does not offer.
    #[must_use]
    pub fn unsupported(self, backend: &'static str) -> LockError {
        LockError::Unsupported {
            backend,
            primitive: self.name(),
        }
    }
}

impl Capabilities {
    /// Capabilities of a cross-process backend named `backend` with TTL expiry and no push
    /// features; set the other fields to what the backend offers.
    #[must_use]
    pub const fn new(backend: &'static str) -> Self {
        Self {
            backend,
            cross_process: true,
            push_wakeups: false,
            lease_expiry: true,
            loss_push: false,
            primitives: Primitives::NONE,
        }
    }
}

/// One request for a lease, as the client hands it to a backend.
#[derive(Debug)]
#[non_exhaustive]
pub struct AcquireRequest<'a> {
    /// The validated, namespaced key.
    pub key: &'a LockKey,
    /// The token the lease must be stored under. Retrying with the same token must be
    /// idempotent: a grant already held under it is returned again, not granted twice.
    pub owner: OwnerToken,
    /// The lease length to set.
    pub ttl: Duration,
    /// When to stop waiting: `Some(now)` means try once, `None` means wait until granted.
    pub deadline: Option<Instant>,
    /// What the lease grants ([`LeaseKind::Exclusive`] unless set with
    /// [`with_kind`](Self::with_kind)).
    pub kind: LeaseKind,
    /// For a [`LeaseKind::Read`] request: the owner token of the caller's own write lease on
    /// the same key, which must not block it (a writer taking a read lock, to downgrade).
    pub downgrade_from: Option<OwnerToken>,
    /// How long, at least, after this grant the store keeps what makes the key's next token
    /// larger than this one's (Redis: the fencing counter; PostgreSQL: the lock row once the
    /// lease ends), when shorter than the backend's own retention (a day); `None`: the
    /// backend's. See [`LockClientBuilder::fence_retention`](crate::LockClientBuilder::fence_retention).
    pub fence_retention: Option<Duration>,
}

impl<'a> AcquireRequest<'a> {
    /// A request; `deadline` as in the field's docs.
    #[must_use]
    pub fn new(
        key: &'a LockKey,
        owner: OwnerToken,
        ttl: Duration,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            key,
            owner,
            ttl,
            deadline,
            kind: LeaseKind::Exclusive,
            downgrade_from: None,
            fence_retention: None,
        }
    }

    /// The same request, with the key's fencing state kept at least `retention` after the
    /// grant (see [`fence_retention`](Self::fence_retention)).
    #[must_use]
    pub fn retaining_fence(mut self, retention: Duration) -> Self {
        self.fence_retention = Some(retention);
        self
    }

    /// The same request for a lease of `kind`.
    #[must_use]
    pub fn with_kind(mut self, kind: LeaseKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same read request, not blocked by the caller's own write lease `writer`.
    #[must_use]
    pub fn downgrading(mut self, writer: OwnerToken) -> Self {
        self.downgrade_from = Some(writer);
        self
    }

    /// True once `deadline` has passed (never for an unlimited wait).
    #[must_use]
    pub fn deadline_passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// A granted lease, as a backend returns it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Grant<L> {
    /// Whatever the backend needs to renew and release this lease later.
    pub lease: L,
    /// This grant's fencing token: larger than every earlier grant of the same key.
    pub fence: FencingToken,
    /// When the command that won the lease was sent; the lease is trusted from here, not from
    /// the reply, so a delayed reply shortens it instead of stretching it.
    pub sent_at: Instant,
    /// Fired by the backend when it learns of a loss by push (see
    /// [`Capabilities::loss_push`]); `None` when it cannot.
    pub loss: Option<LossSignal>,
    /// The lease length the store set, when shorter than the request's `ttl`: a fair lock
    /// handed over by the server holds the lock for a short claim window only, so a waiter
    /// that has gone costs the queue that window, not a whole lease. The client trusts the
    /// grant for this long from `sent_at` and has the watchdog renew it to the full `ttl` at
    /// once. `None`: the request's `ttl`.
    pub ttl: Option<Duration>,
}

impl<L> Grant<L> {
    /// A grant without a push loss signal.
    #[must_use]
    pub fn new(lease: L, fence: FencingToken, sent_at: Instant) -> Self {
        Self {
            lease,
            fence,
            sent_at,
            loss: None,
            ttl: None,
        }
    }

    /// A grant the store holds for `ttl` only (see [`Grant::ttl`]).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Adds the backend's push loss signal.
    #[must_use]
    pub fn with_loss(mut self, loss: LossSignal) -> Self {
        self.loss = Some(loss);
        self
    }

    fn map<M>(self, f: impl FnOnce(L) -> M) -> Grant<M> {
        Grant {
            lease: f(self.lease),
            fence: self.fence,
            sent_at: self.sent_at,
            loss: self.loss,
            ttl: self.ttl,
        }
    }
}

/// A store that can hold leases. Implement this; use it through [`crate::LockClient`].
pub trait LockBackend: Clone + Send + Sync + 'static {
    /// What the backend keeps per granted lease (keys, token, session handle...).
    type Lease: Send + Sync + 'static;

    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;

    /// Grants the lease, waiting until `request.deadline` while it is held by another owner.
    ///
    /// Returns `Ok(None)` when the deadline passed with the key still held. Dropping the
    /// returned future must leave no queue entry, subscription or waiter count behind.
    fn acquire(
        &self,
        request: AcquireRequest<'_>,
    ) -> impl Future<Output = Result<Option<Grant<Self::Lease>>>> + Send;

    /// Confirms the lease is still held by its owner; with `Some(ttl)` also sets its remaining
    /// time to `ttl`. `Ok(false)` means another owner holds it or nobody does.
    fn renew(
        &self,
        lease: &Self::Lease,
        ttl: Option<Duration>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Releases the lease if, and only if, it is still held by its owner (`Ok(true)`); a late
    /// or repeated release finds another owner or none and changes nothing (`Ok(false)`).
    fn release(&self, lease: &Self::Lease) -> impl Future<Output = Result<bool>> + Send;

    /// Keeps what makes the key's next fencing token larger than `lease`'s at least
    /// `at_least` from now (never shorter than it is), for data written under this token that
    /// outlives the lease. The default does nothing: for a backend whose tokens come from a
    /// source kept for good (a sequence, a revision) or for longer than any such data.
    fn keep_fence(
        &self,
        lease: &Self::Lease,
        at_least: Duration,
    ) -> impl Future<Output = Result<()>> + Send {
        let (_, _) = (lease, at_least);
        std::future::ready(Ok(()))
    }

    /// Cleans up after an acquisition under `owner` that ended without handing a grant to its
    /// caller: its future was dropped (a timeout, `select!`, an aborted task) or it failed
    /// after a command may have reached the store. Whatever the store holds for `key` under
    /// this owner token (a granted lease, a queue node, a row) is released, waking the next
    /// waiter as a release would; `Ok(true)` when something was found.
    ///
    /// The client runs it in a task of its own, so it outlives the dropped future, and only
    /// with the token of the acquisition that ended (a fresh random token per acquisition), so
    /// it can never touch another owner's lock. It must take effect after any command the
    /// abandoned acquisition already sent: send it on the same connection or session (whose
    /// order the server keeps), or repeat it once such a command can no longer land.
    fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// The [circuit breaker](crate::breaker) of this backend's server connection, if it has
    /// one (the default: none, as for the memory backend). The backend consults it around
    /// every command it sends; the client also asks it before an acquisition starts, so that
    /// one refused while the server is known to be down leaves nothing to clean up.
    fn breaker(&self) -> Option<&Breaker> {
        None
    }

    /// How many acquisitions of `kind` wait on `key` right now (for monitoring and tests). The
    /// default, for a backend whose waiters wait in their own process, is
    /// [`LockError::Unsupported`] for a "waiter queue in the store".
    fn queue_length(
        &self,
        key: &LockKey,
        kind: LeaseKind,
    ) -> impl Future<Output = Result<usize>> + Send {
        let (_, _) = (key, kind);
        // Not "no lock": the backend may well offer the kind, only not a queue to count.
        std::future::ready(Err(LockError::Unsupported {
            backend: self.capabilities().backend,
            primitive: "waiter queue in the store",
        }))
    }

    /// Sets the size of the semaphore `key` to `permits` (at least 1). Leases already granted
    /// stay; while more permits are held than the new size, nobody else gets one.
    fn set_permits(&self, key: &LockKey, permits: u32) -> impl Future<Output = Result<()>> + Send {
        let (_, _) = (key, permits);
        let backend = self.capabilities().backend;
        async move { Err(LeaseKind::Permits { count: 1, limit: 1 }.unsupported(backend)) }
    }

    /// The semaphore `key`'s size (`None` when the store has none set yet) and the permits
    /// held under live leases.
    fn semaphore_state(
        &self,
        key: &LockKey,
    ) -> impl Future<Output = Result<SemaphoreState>> + Send {
        let _ = key;
        let backend = self.capabilities().backend;
        async move { Err(LeaseKind::Permits { count: 1, limit: 1 }.unsupported(backend)) }
    }

    /// Creates the latch `key` with `count` (at least 1), expiring `expire` after creation;
    /// `Ok(false)`, changing nothing, when a latch with a count above zero exists.
    fn latch_create(
        &self,
        key: &LockKey,
        count: u64,
        expire: Duration,
    ) -> impl Future<Output = Result<bool>> + Send {
        let _ = (key, count, expire);
        unsupported_latch(self.capabilities().backend)
    }

    /// Counts the latch `key` down by one and returns what is left; at zero the latch is gone
    /// and every waiter is woken. A missing latch stays missing (`Ok(0)`).
    fn latch_count_down(&self, key: &LockKey) -> impl Future<Output = Result<u64>> + Send {
        let _ = key;
        unsupported_latch(self.capabilities().backend)
    }

    /// The latch `key`'s count; `0` when it reached zero, expired or never existed.
    fn latch_count(&self, key: &LockKey) -> impl Future<Output = Result<u64>> + Send {
        let _ = key;
        unsupported_latch(self.capabilities().backend)
    }

    /// Waits until the latch `key` is at zero (or gone), by push; `Ok(false)` when `deadline`
    /// passed first. Dropping the future leaves nothing behind.
    fn latch_wait(
        &self,
        key: &LockKey,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<bool>> + Send {
        let _ = (key, deadline);
        unsupported_latch(self.capabilities().backend)
    }
}

/// A semaphore as the store has it (see [`LockBackend::semaphore_state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreState {
    /// The number of permits, `None` when none was set yet.
    pub permits: Option<u32>,
    /// Permits held under leases that have not run out.
    pub held: u32,
}

impl SemaphoreState {
    /// A state with `permits` and `held`.
    #[must_use]
    pub fn new(permits: Option<u32>, held: u32) -> Self {
        Self { permits, held }
    }
}

fn unsupported_latch<T: Send>(backend: &'static str) -> impl Future<Output = Result<T>> + Send {
    std::future::ready(Err(LockError::Unsupported {
        backend,
        primitive: "count-down latch",
    }))
}

/// A granted lease bound to its backend, object-safe.
pub trait DynLease: Send + Sync {
    /// See [`LockBackend::renew`].
    fn renew(&self, ttl: Option<Duration>) -> BoxFuture<'_, Result<bool>>;
    /// See [`LockBackend::release`].
    fn release(&self) -> BoxFuture<'_, Result<bool>>;
    /// See [`LockBackend::keep_fence`].
    fn keep_fence(&self, at_least: Duration) -> BoxFuture<'_, Result<()>>;
}

/// A grant whose lease is bound to its backend, as [`DynLockBackend::acquire`] returns it.
pub type DynGrant = Grant<Box<dyn DynLease>>;

/// The object-safe form of [`LockBackend`], implemented for every `LockBackend`.
pub trait DynLockBackend: Send + Sync {
    /// See [`LockBackend::capabilities`].
    fn capabilities(&self) -> Capabilities;
    /// See [`LockBackend::acquire`].
    fn acquire<'a>(
        &'a self,
        request: AcquireRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<DynGrant>>>;
    /// See [`LockBackend::release_abandoned`].
    fn release_abandoned<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> BoxFuture<'a, Result<bool>>;
    /// See [`LockBackend::breaker`].
    fn breaker(&self) -> Option<&Breaker>;
    /// See [`LockBackend::queue_length`].
    fn queue_length<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
    ) -> BoxFuture<'a, Result<usize>>;
    /// See [`LockBackend::set_permits`].
    fn set_permits<'a>(&'a self, key: &'a LockKey, permits: u32) -> BoxFuture<'a, Result<()>>;
    /// See [`LockBackend::semaphore_state`].
    fn semaphore_state<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<SemaphoreState>>;
    /// See [`LockBackend::latch_create`].
    fn latch_create<'a>(
        &'a self,
        key: &'a LockKey,
        count: u64,
        expire: Duration,
    ) -> BoxFuture<'a, Result<bool>>;
    /// See [`LockBackend::latch_count_down`].
    fn latch_count_down<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>>;
    /// See [`LockBackend::latch_count`].
    fn latch_count<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>>;
    /// See [`LockBackend::latch_wait`].
    fn latch_wait<'a>(
        &'a self,
        key: &'a LockKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<bool>>;
}

struct BoundLease<B: LockBackend> {
    backend: B,
    lease: B::Lease,
}

impl<B: LockBackend> DynLease for BoundLease<B> {
    fn renew(&self, ttl: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.backend.renew(&self.lease, ttl))
    }

    fn release(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.backend.release(&self.lease))
    }

    fn keep_fence(&self, at_least: Duration) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.backend.keep_fence(&self.lease, at_least))
    }
}

impl<B: LockBackend> DynLockBackend for B {
    fn capabilities(&self) -> Capabilities {
        LockBackend::capabilities(self)
    }

    fn acquire<'a>(
        &'a self,
        request: AcquireRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let grant = LockBackend::acquire(self, request).await?;
            Ok(grant.map(|grant| {
                grant.map(|lease| {
                    Box::new(BoundLease {
                        backend: self.clone(),
                        lease,
                    }) as Box<dyn DynLease>
                })
            }))
        })
    }

    fn release_abandoned<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LockBackend::release_abandoned(self, key, kind, owner))
    }

    fn breaker(&self) -> Option<&Breaker> {
        LockBackend::breaker(self)
    }

    fn queue_length<'a>(
        &'a self,
        key: &'a LockKey,
        kind: LeaseKind,
    ) -> BoxFuture<'a, Result<usize>> {
        Box::pin(LockBackend::queue_length(self, key, kind))
    }

    fn set_permits<'a>(&'a self, key: &'a LockKey, permits: u32) -> BoxFuture<'a, Result<()>> {
        Box::pin(LockBackend::set_permits(self, key, permits))
    }

    fn semaphore_state<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<SemaphoreState>> {
        Box::pin(LockBackend::semaphore_state(self, key))
    }

    fn latch_create<'a>(
        &'a self,
        key: &'a LockKey,
        count: u64,
        expire: Duration,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LockBackend::latch_create(self, key, count, expire))
    }

    fn latch_count_down<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>> {
        Box::pin(LockBackend::latch_count_down(self, key))
    }

    fn latch_count<'a>(&'a self, key: &'a LockKey) -> BoxFuture<'a, Result<u64>> {
        Box::pin(LockBackend::latch_count(self, key))
    }

    fn latch_wait<'a>(
        &'a self,
        key: &'a LockKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LockBackend::latch_wait(self, key, deadline))
    }
}

/// Spreads re-checks of many waiters (and the probes of many breakers) over ±20% of `base`,
/// so they do not arrive together.
pub(crate) fn jitter(base: std::time::Duration) -> std::time::Duration {
    let mut byte = [0u8; 1];
    let spread = if getrandom::fill(&mut byte).is_ok() {
        f64::from(byte[0]) / 255.0
    } else {
        0.5
    };
    base.mul_f64(0.8 + 0.4 * spread)
}
