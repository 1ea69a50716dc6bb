//! What a computation hands the cache (bytes to share, bytes for its caller only, or a
//! failure and what to hand on of it), and what a call ends with before it reaches its
//! caller: a failure handed over from another caller keeps its bytes here, so the response
//! cache can replay a failing response; [`CacheError::Elsewhere`] carries its text, and
//! [`CacheError::Shared`] the error itself when it was shared in this process ([`Typed`](crate::erased::Typed)).

use std::time::{Duration, SystemTime};

use super::{CacheError, CacheStatus, Cached, Freshness};
use crate::backend::BoxFuture;
pub(crate) use crate::erased::{AnyError, Typed};
use crate::LockError;

/// A computation, boxed so the algorithm is written once for every value type.
pub(crate) type Compute<E> =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<Computed, Failure<E>>> + Send>;

/// What a computation gave.
pub(crate) enum Computed {
    /// Bytes to store and share, kept with this freshness.
    Value(Vec<u8>, Freshness),
    /// Bytes for this caller only: the callers waiting for it compute their own; with `mark`,
    /// so do later callers for the call's pass-through TTL (without `mark`, the answer says
    /// nothing about the key: an `only-if-cached` miss).
    Unshared { value: Vec<u8>, mark: bool },
}

/// Why a computation gave no bytes. `Replayable` and `Alone` are made by the HTTP layer's
/// response cache only.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Failure<E> {
    /// The computation's error; the callers it is shared with get its message.
    User(E),
    /// Encoding the value failed.
    Encode(String),
    /// The computation's error, and the bytes to hand the callers it is shared with (an
    /// encoded HTTP response they replay).
    Replayable { error: E, shared: Vec<u8> },
    /// The computation's error for this caller alone: neither shared nor remembered (the
    /// waiting callers take the lease over).
    Alone(E),
}

impl<E: std::fmt::Display> Failure<E> {
    /// What the callers this failure is shared with are handed; `None` when it is not shared.
    pub(crate) fn shared(&self) -> Option<Vec<u8>> {
        match self {
            Self::User(e) => Some(e.to_string().into_bytes()),
            Self::Encode(e) => Some(format!("encoding the value failed: {e}").into_bytes()),
            Self::Replayable { shared, .. } => Some(shared.clone()),
            Self::Alone(_) => None,
        }
    }

    /// The error this caller gets.
    pub(crate) fn into_error(self) -> CacheError<E> {
        match self {
            Self::User(e) | Self::Replayable { error: e, .. } | Self::Alone(e) => {
                CacheError::Compute(e)
            }
            Self::Encode(e) => CacheError::Decode(e),
        }
    }
}

/// A failure handed to callers other than the one whose computation failed. When it failed,
/// and for how long it is remembered, are read by the HTTP layer's response cache (for its
/// `Cache-Status` and `Retry-After`).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct SharedFailure {
    /// What the failed computation handed on (see [`Failure::shared`]).
    pub(crate) payload: Vec<u8>,
    /// Read from the store, where it is remembered for the negative TTL; not handed over as
    /// the computation this caller waited for failed.
    pub(crate) remembered: bool,
    /// When the computation failed.
    pub(crate) failed_at: SystemTime,
    /// How long it is remembered from then.
    pub(crate) negative: Duration,
    /// The error itself, when the computation this caller waited on in this process failed
    /// and its caller shares errors typed ([`Typed`](crate::erased::Typed)).
    pub(crate) typed: Option<AnyError>,
}

impl SharedFailure {
    /// How long it is still remembered at `now`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn remembered_for(&self, now: SystemTime) -> Duration {
        (self.failed_at + self.negative)
            .duration_since(now)
            .unwrap_or_default()
    }
}

/// Why a call gave no value, before it reaches its caller as a [`CacheError`].
pub(crate) enum CallError<E> {
    /// This caller's own computation failed; `shared` is what the callers waiting for it
    /// were handed.
    Own {
        error: CacheError<E>,
        shared: Option<SharedFailure>,
    },
    /// Another caller's computation failed (now, or within the negative TTL).
    Shared(SharedFailure),
    /// This caller's own computation failed, and its error (`typed`) is shared with the
    /// callers that waited for it.
    OwnShared(SharedFailure),
    /// Anything else.
    Cache(CacheError<E>),
}

impl<E> CallError<E> {
    /// As the caller gets it: a shared failure as the error itself when `typed` can recover
    /// it, else its message.
    pub(crate) fn into_cache_error(self, typed: Option<Typed<E>>) -> CacheError<E> {
        match self {
            Self::Own { error, .. } | Self::Cache(error) => error,
            Self::Shared(failure) | Self::OwnShared(failure) => {
                let error = typed
                    .zip(failure.typed.clone())
                    .and_then(|(typed, error)| (typed.recover)(error));
                match error {
                    Some(error) => CacheError::Shared(error),
                    None => CacheError::Elsewhere(
                        String::from_utf8_lossy(&failure.payload).into_owned(),
                    ),
                }
            }
        }
    }
}

/// The metric `result` of a call that ended with `outcome`, and how long its computation took
/// when it computed.
pub(crate) fn metric<E>(outcome: &Outcome<E>) -> (&'static str, Option<Duration>) {
    match outcome {
        Ok(cached) => {
            let computed = matches!(
                cached.status,
                CacheStatus::Computed | CacheStatus::Uncacheable | CacheStatus::PassThrough
            );
            (
                crate::cache::metrics::cache_status_label(cached.status),
                computed.then_some(cached.computed_in),
            )
        }
        Err(CallError::Shared(_)) => ("shared_failure", None),
        Err(CallError::OwnShared(_)) => ("compute_failed", None),
        Err(CallError::Own { error, .. } | CallError::Cache(error)) => {
            (crate::cache::metrics::cache_error_label(error), None)
        }
    }
}

impl<E> From<CacheError<E>> for CallError<E> {
    fn from(error: CacheError<E>) -> Self {
        Self::Cache(error)
    }
}

impl<E> From<LockError> for CallError<E> {
    fn from(error: LockError) -> Self {
        Self::Cache(CacheError::Lock(error))
    }
}

/// What a call ends with, inside the cache.
pub(crate) type Outcome<E> = Result<Cached<Vec<u8>>, CallError<E>>;
