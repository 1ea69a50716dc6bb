//! Cache-stampede protection: a value computed once across every instance, handed to everyone
//! waiting for it by push, stored only if no newer computation has stored already.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::cache::{Cache, CacheStatus};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Across instances: `Cache::builder(RedisResultStore::from_backend(&backend).await?, backend)`.
//! let cache = Cache::memory("shop")?;
//! let product = cache
//!     .entry("product:42")
//!     .fresh_for(Duration::from_secs(60))
//!     .stale_while_revalidate(Duration::from_secs(300))
//!     .try_get_with(|| async { Ok::<_, std::io::Error>(b"{\"name\":\"lamp\"}".to_vec()) })
//!     .await?;
//! assert_eq!(product.status, CacheStatus::Computed);
//! # Ok(()) }
//! ```
//!
//! # How a call goes
//! - **Fresh**: one read, no lock.
//! - **Stale, within stale-while-revalidate**: served at once; one refresh runs in the
//!   background, across every instance (whoever gets the key's lease).
//! - **Missing or expired**: callers in one process share one flight; across processes one
//!   caller gets the key's lease (a [`LockClient`](crate::LockClient) lease: short and renewed
//!   while it computes ([`DEFAULT_COMPUTE_LEASE`]), fencing token, cancel-safe), computes, and
//!   stores the value *only if no value with a larger fencing token is there* (a computation
//!   whose lease was lost and taken over cannot overwrite the newer value). The store pushes
//!   the value to every waiting process; waiting processes also queue for the lease, so when
//!   the computing caller fails, panics or is cancelled its lease frees at once, and when its
//!   process dies the lease runs out within 750 ms; one of them takes over, and stores.
//! - **Errors** are handed to the callers waiting for the failed computation (they do not
//!   compute it again: in this process they share the error itself,
//!   [`CacheError::Shared`]), and remembered for the negative TTL if one is set (callers get
//!   its message without computing, [`CacheError::Elsewhere`]). With a value still there (stale, within stale-if-error), a
//!   failure serves that value instead, to the waiters too, and for the negative TTL.
//! - **Values not to be shared** ([`CacheRequest::try_get_with_freshness`] with `None`): the
//!   waiting callers compute their own; with a pass-through TTL, later callers too, at once,
//!   without a lease.
//! - **Lookups without computing**: [`CacheRequest::get`] (the stored value, if fresh) and
//!   [`CacheRequest::insert`] (stored as a computation stores); [`Cache::invalidate`].
//! - **Backend down**: computed without collapsing across instances, not stored, status
//!   [`CacheStatus::FailOpen`] (or an error with [`OnBackendError::FailClosed`]).

mod call;
mod client;
mod codec;
pub(crate) mod computed;
mod entry;
mod flight;
mod fn_error;
mod fused_lease;
mod global;
mod lookup;
pub(crate) mod metrics;
mod outcome;
pub(crate) mod policy;
mod request;

pub use self::client::{
    Cache, CacheBuilder, DEFAULT_COMPUTE_LEASE, DEFAULT_MAX_VALUE_BYTES, DEFAULT_WAIT,
};
#[cfg(feature = "json")]
pub use self::codec::Json;
pub use self::codec::{Bytes, Codec, Utf8};
pub use self::fn_error::FlightFnError;
pub use self::outcome::{CacheError, CacheFailure, CacheStatus, Cached};
pub use self::policy::{Freshness, OnBackendError, OnWaitTimeout, MAX_WINDOW};
pub use self::request::CacheRequest;
