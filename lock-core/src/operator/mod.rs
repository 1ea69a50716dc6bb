//! The operator's view: who holds a key and who waits for it, what is held under a prefix, a
//! forced release that is safe for the resource, and the audit trail it leaves.
//!
//! [`LockAdmin`] ([`LockClient::admin`](crate::LockClient::admin)) is the way in, on any
//! backend that implements [`OperatorBackend`](crate::backend::OperatorBackend). `lockctl` and
//! the admin pages of `lock-tower` and `lock-actix` are built on it.
//!
//! - [`LockAdmin::inspect`]: free, held or queued; each holder's kind, owner token,
//!   [label](crate::HolderLabel), fencing token, time of grant and lease left; the waiters in
//!   queue order; and what the store cannot tell (PostgreSQL and MySQL keep no queue).
//! - [`LockAdmin::list`]: the keys held or waited on, a bounded page at a time, walked with a
//!   cursor (Redis: `SCAN` on every primary, never `KEYS`).
//! - [`LockAdmin::force_release`]: ends the holder's lease, raises the key's fencing token past
//!   it, wakes the next waiter, fires the holder's `lost()` with
//!   [`LostReason::Revoked`](crate::LostReason::Revoked), and keeps an
//!   [`AuditRecord`](crate::backend::AuditRecord), all in one step of the store.
//! - [`LockAdmin::audit`]: the records kept, newest first.
//!
//! Inspection is for people. What it shows can change the moment it is read: code that must
//! know whether it may act acquires the lock (check-then-act is a race).
//!
//! ```
//! use lock_core::{LockClient, LostReason, MemoryBackend};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! let locks = LockClient::builder(MemoryBackend::new()).namespace("shop").build()?;
//! let stuck = locks.lock("order:42").await?;
//!
//! let admin = locks.admin();
//! let seen = admin.inspect("order:42").await?;
//! assert_eq!(seen.holders[0].fencing_token, stuck.fencing_token());
//!
//! let record = admin.force_release("order:42", "stuck since the deploy", "alice").await?;
//! assert!(record.new_token > stuck.fencing_token());
//! assert!(matches!(stuck.lost().await, LostReason::Revoked { .. }));
//! assert_eq!(admin.audit(Some("order:42"), 10).await?[0].operator, "alice");
//! # Ok(()) }
//! ```

mod admin;
pub mod json;

pub use self::admin::LockAdmin;
#[cfg(feature = "http")]
pub(crate) use self::admin::AUDIT_RETENTION_BOUNDS;
