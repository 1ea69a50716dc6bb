//! The primitives beyond the lock, each in its file: the [`fair`] lock, the [`read_write`]
//! lock, the [`semaphore`] with expiring permits and the count-down [`latch`].
//!
//! The first three are kinds of lease ([`LeaseKind`](crate::backend::LeaseKind)): they are
//! acquired with the lock's [`LockRequest`](crate::LockRequest) and held as a
//! [`LockGuard`](crate::LockGuard), so the watchdog, `lost()`, fencing tokens, per-task
//! reentrancy, cancel-safe waiting and typed errors are the lock's own. The latch holds no
//! lease.

pub mod fair;
pub mod latch;
pub mod read_write;
pub mod semaphore;
