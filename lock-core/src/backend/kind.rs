//! What a lease grants: the lock, or one of the primitives beyond it.

use crate::LockError;

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
    /// store has none set yet ([`SemaphoreBackend::set_permits`](super::SemaphoreBackend::set_permits) changes it).
    Permits {
        /// Permits this lease holds (at least 1).
        count: u32,
        /// The semaphore's size if the store has none yet.
        limit: u32,
    },
    /// Leadership of an election (see [`Election`](crate::Election)): one leader, granted to
    /// the candidates in the order they campaigned, the leader's participant id readable by
    /// everyone ([`ElectionBackend::leader`](super::ElectionBackend::leader)).
    Leader,
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
            Self::Leader => "leader election",
        }
    }

    /// True for the kinds with a single holder (lock, fair lock, write lock, leadership).
    #[must_use]
    pub fn is_exclusive(self) -> bool {
        matches!(
            self,
            Self::Exclusive | Self::Fair | Self::Write | Self::Leader
        )
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
