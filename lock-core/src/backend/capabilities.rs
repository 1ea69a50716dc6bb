//! What a backend says it can do: the client and the conformance suite go by it.

use super::LeaseKind;

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
/// assert!(all.fair && all.read_write && all.semaphore && all.latch && all.election);
/// assert!(!Primitives::NONE.fair);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Primitives {
    /// [`LeaseKind::Fair`]: strict FIFO, no barging.
    pub fair: bool,
    /// [`LeaseKind::Read`] and [`LeaseKind::Write`].
    pub read_write: bool,
    /// [`LeaseKind::Permits`], and the semaphore's size and state ([`SemaphoreBackend`](super::SemaphoreBackend)).
    pub semaphore: bool,
    /// The count-down latch ([`LatchBackend`](super::LatchBackend)).
    pub latch: bool,
    /// Leader election: [`LeaseKind::Leader`] and reading the leader
    /// ([`ElectionBackend`](super::ElectionBackend)).
    pub election: bool,
}

impl Primitives {
    /// The lock only.
    pub const NONE: Self = Self {
        fair: false,
        read_write: false,
        semaphore: false,
        latch: false,
        election: false,
    };
    /// Every primitive.
    pub const ALL: Self = Self {
        fair: true,
        read_write: true,
        semaphore: true,
        latch: true,
        election: true,
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
            LeaseKind::Leader => self.election,
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

    /// Everything a lease backend can declare: cross-process, pushed wake-ups, leases that
    /// expire, losses reported as they happen, and every primitive (Redis, ZooKeeper and etcd
    /// declare this).
    ///
    /// ```
    /// use lock_core::backend::{Capabilities, Primitives};
    ///
    /// let full = Capabilities::full("mine");
    /// assert!(full.push_wakeups && full.loss_push && full.primitives == Primitives::ALL);
    /// ```
    #[must_use]
    pub const fn full(backend: &'static str) -> Self {
        Self {
            backend,
            cross_process: true,
            push_wakeups: true,
            lease_expiry: true,
            loss_push: true,
            primitives: Primitives::ALL,
        }
    }
}
