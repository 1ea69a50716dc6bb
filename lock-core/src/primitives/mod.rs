//! The primitives beyond the lock, each in its file: the [`read_write`] lock, the
//! [`semaphore`] with expiring permits and the count-down [`latch`]. The fair lock has no type
//! of its own: [`LockClient::fair_lock`](crate::LockClient::fair_lock) is a [`LockRequest`]
//! served in arrival order. [`LockClient`](crate::LockClient) makes each of them.
//!
//! The first three are kinds of lease ([`LeaseKind`](crate::backend::LeaseKind)): they are
//! acquired with the lock's [`LockRequest`] and held as a
//! [`LockGuard`](crate::LockGuard), so the watchdog, `lost()`, fencing tokens, per-task
//! reentrancy, cancel-safe waiting and typed errors are the lock's own. The latch holds no
//! lease.
//!
//! [`LockRequest`]: crate::LockRequest

pub mod latch;
pub mod read_write;
pub mod semaphore;
