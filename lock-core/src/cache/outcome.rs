//! What a cache call returns: the value, and what happened to get it.

use std::time::{Duration, SystemTime};

use crate::{FencingToken, LockError};

/// How a value was obtained, for logs, metrics and `Cache-Status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheStatus {
    /// A fresh stored value; no lock taken.
    Hit,
    /// Missing or expired: computed by this caller, under the key's lease, and stored.
    Computed,
    /// Missing or expired while another caller (here or in another instance) computed it: this
    /// caller waited and was handed that value.
    Collapsed,
    /// Stale within stale-while-revalidate: served at once while one refresh runs.
    Stale,
    /// Computing failed; a value within stale-if-error was served instead.
    StaleIfError,
    /// The backend could not be reached: computed here without collapsing across instances,
    /// not stored (the default, a stampede lock being an efficiency lock).
    FailOpen,
    /// The wait for another caller's computation ran out: computed here, not stored.
    WaitTimedOut,
    /// Computed here, and the computation said its value must not be stored or shared (an
    /// uncacheable HTTP response, say): callers that were waiting for it compute their own.
    Uncacheable,
    /// The key is marked pass-through (a computation said, less than its pass-through TTL ago,
    /// that its value must not be shared): computed here at once, without a lease or waiting
    /// for anyone, not stored.
    PassThrough,
}

impl CacheStatus {
    /// The value came from the store or another caller, not from this caller's computation.
    #[must_use]
    pub fn is_shared(self) -> bool {
        matches!(
            self,
            Self::Hit | Self::Collapsed | Self::Stale | Self::StaleIfError
        )
    }
}

/// A value from the cache, with where it came from.
///
/// ```
/// use lock_core::cache::{Cache, CacheStatus};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cache = Cache::memory("shop")?;
/// let first = cache.entry("product:1").try_get_with(|| async { Ok::<_, std::io::Error>(b"lamp".to_vec()) }).await?;
/// assert_eq!((first.value.as_slice(), first.status), (&b"lamp"[..], CacheStatus::Computed));
/// let again = cache.entry("product:1").try_get_with(|| async { Ok::<_, std::io::Error>(b"other".to_vec()) }).await?;
/// assert_eq!((again.value.as_slice(), again.status), (&b"lamp"[..], CacheStatus::Hit));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Cached<V> {
    /// The value.
    pub value: V,
    /// How it was obtained.
    pub status: CacheStatus,
    /// When it was computed and stored (for values not stored: when computed).
    pub stored_at: SystemTime,
    /// How long computing it took.
    pub computed_in: Duration,
    /// How much longer it is fresh (zero when stale or not stored).
    pub fresh_for: Duration,
    /// The fencing token of the computation that produced it (`None` when computed without
    /// a lease: fail-open, wait timed out).
    pub fencing_token: Option<FencingToken>,
}

impl<V> Cached<V> {
    /// The same outcome with the value turned into another type.
    pub fn map<W>(self, f: impl FnOnce(V) -> W) -> Cached<W> {
        Cached {
            value: f(self.value),
            status: self.status,
            stored_at: self.stored_at,
            computed_in: self.computed_in,
            fresh_for: self.fresh_for,
            fencing_token: self.fencing_token,
        }
    }
}

/// Why a cache call gave no value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError<E> {
    /// This caller's computation failed (and no stale value could stand in).
    #[error("computing the value failed: {0}")]
    Compute(E),
    /// The computation this caller shared with other callers of this process failed: its
    /// error as it is, shared (as moka's `try_get_with` shares `Arc<E>`). Every caller of
    /// the flight gets it, the one whose computation it was included; a computation no other
    /// caller waited for hands its caller [`Compute`](Self::Compute) instead.
    #[error("computing the value failed: {0}")]
    Shared(std::sync::Arc<E>),
    /// Another caller's computation failed, and only its message reached this caller: a
    /// failure remembered for its negative TTL (read from the store, perhaps written by
    /// another process), pushed by another process, or the failure of a call this caller
    /// waited on with a different error type.
    #[error("computing the value failed elsewhere: {0}")]
    Elsewhere(String),
    /// The computed value is larger than the cache's limit; it was not stored.
    #[error("the value is {size} bytes, over the cache's limit of {limit}")]
    TooLarge {
        /// The value's size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The wait for another caller's computation ran out ([`OnWaitTimeout::Fail`]).
    ///
    /// [`OnWaitTimeout::Fail`]: super::OnWaitTimeout::Fail
    #[error("waited {0:?} for another caller's computation")]
    WaitTimedOut(Duration),
    /// Bad input (key, durations), a backend failure with [`OnBackendError::FailClosed`], or
    /// a stored value that could not be read.
    ///
    /// [`OnBackendError::FailClosed`]: super::OnBackendError::FailClosed
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A stored value could not be decoded into the requested type.
    #[error("the stored value could not be decoded: {0}")]
    Decode(String),
}

/// A cache call's failure that is not its computation's own error: every [`CacheError`]
/// but [`CacheError::Compute`] and [`CacheError::Shared`] (which `Infallible` rules out).
/// `#[single_flight]` fns return their body's error as it is, and these through
/// [`FlightFnError`](super::FlightFnError) (any `E: From<CacheFailure>`; `LockError`,
/// `std::io::Error` and `Box<dyn Error + Send + Sync>` are).
///
/// ```
/// use lock_core::cache::CacheFailure;
///
/// #[derive(Debug)]
/// enum AppError {
///     NotFound,
///     Cache(CacheFailure),
/// }
///
/// impl From<CacheFailure> for AppError {
///     fn from(failure: CacheFailure) -> Self {
///         Self::Cache(failure)
///     }
/// }
///
/// let failure = CacheFailure::Elsewhere("the origin timed out".into());
/// assert!(matches!(AppError::from(failure), AppError::Cache(CacheFailure::Elsewhere(_))));
/// # let _ = AppError::NotFound;
/// ```
pub type CacheFailure = CacheError<std::convert::Infallible>;
