//! The backend trait family: what a store must do to hold leases for [`LockClient`].
//!
//! A backend only grants, renews and releases single leases, each named by a random
//! [`OwnerToken`](crate::OwnerToken). Everything above that (reentrancy, the watchdog, the lost signal, key
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
//! [`LockError::Unsupported`](crate::LockError::Unsupported) for the others.
//!
//! # Optional capabilities
//! What not every store can do is a trait of its own, which a backend implements in a file of
//! its own (object_store's `MultipartStore` model): [`LatchBackend`] (the count-down latch,
//! which holds no lease), [`SemaphoreBackend`] (a semaphore's size and state),
//! [`QueueBackend`] (counting the waiters queued in the store), [`ElectionBackend`]
//! (reading an election's leader) and [`OperatorBackend`] (inspection, forced release and its
//! audit trail, for operators). A backend that implements one
//! returns itself from the matching `as_*_backend` method of [`LockBackend`]; the client
//! refuses a call a backend lacks, with [`LockError::Unsupported`](crate::LockError::Unsupported),
//! before anything is sent.
//!
//! Implement [`LockBackend`] (async fns, no boxing); [`LockClient`] holds it as
//! `Arc<dyn DynLockBackend>`, which every `LockBackend` is through a blanket impl (and every
//! optional trait has its `Dyn` form the same way).
//!
//! ```
//! use lock_core::backend::LockBackend;
//! use lock_core::{LockClient, MemoryBackend};
//!
//! let backend = MemoryBackend::new();
//! // The memory backend offers every optional capability.
//! assert!(backend.optional_traits().latch.is_some());
//! let locks = LockClient::new(backend);
//! assert!(locks.capabilities().primitives.latch);
//! ```
//!
//! [`LockClient`]: crate::LockClient

mod abandoned;
mod audit;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod audit_text;
mod capabilities;
mod dyn_backend;
mod election;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod expiry;
#[cfg(any(feature = "etcd", feature = "postgres", feature = "mysql"))]
pub(crate) mod in_flight;
mod inspection;
pub(crate) mod key;
mod kind;
mod label;
mod latch;
pub(crate) mod loss_signal;
mod operator;
mod optional_traits;
mod queue;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) mod queue_rule;
mod request;
pub(crate) mod semaphore;
pub(crate) mod token;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub use self::abandoned::Abandoned;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) use self::audit::check_lease_retention;
pub use self::audit::{AuditRecord, ForceRelease, DEFAULT_AUDIT_RETENTION, MAX_AUDIT_TEXT_LEN};
pub use self::capabilities::{Capabilities, Primitives};
#[cfg(feature = "redis")]
pub(crate) use self::dyn_backend::bind;
pub use self::dyn_backend::{DynGrant, DynLease, DynLockBackend};
pub use self::election::{DynElectionBackend, ElectionBackend, Leader, LeaderWait};
pub(crate) use self::inspection::validate_limit;
pub use self::inspection::{
    HolderView, InspectionPage, KeyInspection, KeyStatus, LatchCount, ListCursor, ListRequest,
    PermitUse, Primitive, WaiterView, Waiters, MAX_LIST_LIMIT,
};
pub use self::kind::LeaseKind;
pub use self::label::{HolderLabel, MAX_LABEL_ENTRIES, MAX_LABEL_LEN};
pub use self::latch::{DynLatchBackend, LatchBackend};
pub use self::operator::{DynOperatorBackend, OperatorBackend};
pub use self::optional_traits::OptionalTraits;
pub use self::queue::{DynQueueBackend, QueueBackend};
pub use self::request::{AcquireRequest, Grant};
pub(crate) use self::semaphore::validate_permits;
pub use self::semaphore::{DynSemaphoreBackend, SemaphoreBackend, SemaphoreState};
use crate::breaker::Breaker;
use crate::Result;

/// A boxed, `Send` future, as the object-safe traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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

    /// Cleans up after an acquisition that ended without handing a grant to its caller: its
    /// future was dropped (a timeout, `select!`, an aborted task) or it failed after a command
    /// may have reached the store. Whatever the store holds for `abandoned.key` under its owner
    /// token (a granted lease, a queue node, a row) is released, waking the next
    /// waiter as a release would; `Ok(true)` when something was found.
    ///
    /// The client runs it in a task of its own, so it outlives the dropped future, and only
    /// with the token of the acquisition that ended (a fresh random token per acquisition), so
    /// it can never touch another owner's lock. It must take effect after any command the
    /// abandoned acquisition already sent: send it on the same connection or session (whose
    /// order the server keeps), or repeat it once such a command can no longer land.
    fn release_abandoned(&self, abandoned: &Abandoned)
        -> impl Future<Output = Result<bool>> + Send;

    /// The [circuit breaker](crate::breaker) of this backend's server connection, if it has
    /// one (the default: none, as for the memory backend). The backend consults it around
    /// every command it sends; the client also asks it before an acquisition starts, so that
    /// one refused while the server is known to be down leaves nothing to clean up.
    fn breaker(&self) -> Option<&Breaker> {
        None
    }

    /// Which optional traits ([`LatchBackend`], [`SemaphoreBackend`], [`QueueBackend`]) this
    /// backend implements: a backend that implements them answers
    /// [`OptionalTraits::all(self)`](OptionalTraits::all) here, which is how the client,
    /// holding it as a trait object, finds them (the default: none).
    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::default()
    }
}
