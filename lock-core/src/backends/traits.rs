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
//! Implement [`LockBackend`] (async fns, no boxing); [`LockClient`] holds it as
//! `Arc<dyn DynLockBackend>`, which every `LockBackend` is through a blanket impl.
//!
//! [`LockClient`]: crate::LockClient

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::{FencingToken, LockKey, LossSignal, OwnerToken, Result};

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
        }
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
        }
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
        owner: OwnerToken,
    ) -> impl Future<Output = Result<bool>> + Send;
}

/// A granted lease bound to its backend, object-safe.
pub trait DynLease: Send + Sync {
    /// See [`LockBackend::renew`].
    fn renew(&self, ttl: Option<Duration>) -> BoxFuture<'_, Result<bool>>;
    /// See [`LockBackend::release`].
    fn release(&self) -> BoxFuture<'_, Result<bool>>;
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
        owner: OwnerToken,
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
        owner: OwnerToken,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(LockBackend::release_abandoned(self, key, owner))
    }
}
