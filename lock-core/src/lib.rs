//! Distributed locks for async Rust services: leases with fencing tokens, a watchdog that
//! renews them, a signal when one is lost, per-task reentrancy, and push wake-ups.
//!
//! ```
//! use lock_core::{LockClient, MemoryBackend};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! // `MemoryBackend` for one process; `RedisBackend` (feature `redis`) across machines.
//! let locks = LockClient::builder(MemoryBackend::new()).namespace("shop").build()?;
//!
//! let guard = locks.lock("order:42").await?;
//! // Hand the fencing token to the resource so a stale holder's writes are refused.
//! let fence = guard.fencing_token();
//! tokio::select! {
//!     reason = guard.lost() => eprintln!("lease lost, stopping: {reason}"),
//!     () = async { /* work guarded by the lock, writing with `fence` */ } => {}
//! }
//! guard.release().await?;
//! # let _ = fence; Ok(()) }
//! ```
//!
//! # The pieces
//! - [`LockClient`]: what you hold; cheap to clone. [`LockClient::lock`] starts a
//!   [`LockRequest`] (try, wait up to a duration, or wait forever).
//! - [`LockGuard`]: the held lock: key, [`OwnerToken`], [`FencingToken`], lease,
//!   [`lost()`](LockGuard::lost), [`release()`](LockGuard::release),
//!   [`extend()`](LockGuard::extend).
//! - [`LeaseMode`]: a watchdog lease (default 30 s, renewed every TTL/3) or a fixed TTL.
//! - [`LockOwner`]: carries reentrancy across tasks; see [`owner`](crate::LockOwner) docs for how
//!   the current task is identified.
//! - [`LockBackend`]: what a store implements; [`MemoryBackend`] is always compiled,
//!   `RedisBackend` comes with the `redis` feature.
//! - [`LockError`]: one error type; contention is `Ok(None)`, not an error.
//! - [`breaker`]: the circuit breaker of each server connection: once a backend is known to
//!   be down, calls fail at once ([`LockError::circuit_open`]) and one probe finds out when it
//!   is back; one log line each way.
//! - [`KeyTemplate`]: keys from templates such as `"order:{id}:{user}"`, built as
//!   `#[distributed_lock]` builds them (values percent-encoded so keys never collide).
//! - [`election`]: leader election ([`LockClient::election`]): campaign, the leader's term
//!   (a fencing token), `lost()`, resign, and following the leader from anywhere.
//! - [`stock`]: inventory deducted once per order id, in memory, Redis, PostgreSQL or MySQL.
//!
//! # Guarantees and their limits
//! Leases are measured on the monotonic clock from the moment the winning command was *sent*,
//! minus a drift margin ([`lease::drift_margin`]); a grant whose reply arrives after that is
//! released and not reported as held. The lost signal fires when a lease can no longer be
//! confirmed before it ends. No lease-based lock can stop a holder that is paused past its lease
//! from acting afterwards: that is what fencing tokens are for.

// On docs.rs (`--cfg docsrs`, nightly): each feature-gated item shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Each public module is the folder (or file) of its name: `cache/` is `lock_core::cache`.
// `lock/` is the core lock (client, request, guard, watchdog, lost signal, errors), re-exported
// at the root; `backend/` the trait family every store implements, and beside it each store.
pub mod backend;
pub mod breaker;
pub mod cache;
pub mod election;
mod erased;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod fenced;
mod hex;
#[cfg(feature = "http")]
pub mod http;
pub mod idempotency;
mod jitter;
mod json_text;
pub mod lease;
mod lock;
#[doc(hidden)]
pub mod macro_support;
pub mod memory;
pub mod metrics;
pub mod operator;
pub mod primitives;
#[cfg(feature = "redis")]
pub mod redis;
pub mod results;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql;
pub mod stock;
mod sync;
#[cfg(test)]
mod test_input;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

#[cfg(feature = "redis")]
pub use crate::redis::redlock::{RedLock, RedLockBuilder};
#[cfg(feature = "redis")]
pub use crate::redis::RedisBackend;
pub use backend::key::{LockKey, MAX_KEY_LEN, MAX_NAMESPACE_LEN};
pub use backend::loss_signal::LossSignal;
pub use backend::token::{FencingToken, OwnerToken};
pub use backend::{Capabilities, HolderLabel, LockBackend};
pub use election::{Election, Leader, LeaderWatch, Leadership};
pub use error::{LockError, LostReason, Result};
#[cfg(feature = "etcd")]
pub use etcd::EtcdBackend;
pub use lease::{LeaseMode, WaitPolicy};
pub use lock::client::LockClient;
pub use lock::client_builder::LockClientBuilder;
pub use lock::fn_error::LockFnError;
pub use lock::guard::LockGuard;
pub use lock::key_template::KeyTemplate;
pub use lock::multi::{MultiGuard, MultiLock, PartLost};
pub use lock::owner::LockOwner;
pub use lock::request::LockRequest;
pub use lock::run_once::RunOnce;
pub use lock::scoped::race_lost;
pub use lock::shutdown::ShutdownReport;
#[cfg(feature = "macros")]
pub use lock_macros::{distributed_lock, run_once, single_flight};
pub use memory::{MemoryBackend, MemoryLease};
pub use primitives::latch::CountDownLatch;
pub use primitives::read_write::ReadWriteLock;
pub use primitives::semaphore::Semaphore;
#[cfg(feature = "mysql")]
pub use sql::{MySqlBackend, MySqlBackendBuilder};
#[cfg(feature = "postgres")]
pub use sql::{PostgresAdvisoryBackend, PostgresBackend, PostgresBackendBuilder};
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZooKeeperBackend;
