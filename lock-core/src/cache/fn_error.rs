//! What a `#[single_flight]` fn's error type must be able to hold, and the conversions of
//! [`CacheFailure`] into the error types such a fn commonly returns ([`LockError`],
//! `std::io::Error`).

use std::io;

use super::{CacheError, CacheFailure};
use crate::LockError;

/// An error type a `#[single_flight]` fn can return: one that holds a [`CacheFailure`] (an
/// unreachable backend, a wait that ran out, another caller's failure). Every
/// `E: From<CacheFailure>` is one, and so are [`LockError`], `std::io::Error` and
/// `Box<dyn Error + Send + Sync>`; implement `From<CacheFailure>` for an error type of your
/// own, never this trait.
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{CacheFailure, FlightFnError};
/// use lock_core::LockError;
///
/// let waited = CacheFailure::WaitTimedOut(Duration::from_secs(2));
/// assert!(LockError::from_cache_failure(waited).is_timeout());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a `#[single_flight]` failure (an unreachable backend, a wait that ran out, another caller's failure)",
    label = "the fn's error type must implement `From<lock_core::cache::CacheFailure>`",
    note = "implement `From<lock_core::cache::CacheFailure>` for `{Self}`, or return `lock_core::LockError`, `std::io::Error` or `Box<dyn std::error::Error + Send + Sync>`"
)]
pub trait FlightFnError: Sized {
    /// The fn's error for `failure`.
    fn from_cache_failure(failure: CacheFailure) -> Self;
}

impl<E: From<CacheFailure>> FlightFnError for E {
    fn from_cache_failure(failure: CacheFailure) -> Self {
        E::from(failure)
    }
}

/// A lock failure stays itself; a wait that ran out is a [`LockError::Timeout`]; a stored
/// value that cannot be decoded a [`LockError::Protocol`]; a value too large to store, or
/// another caller's failure, a [`LockError::Unavailable`] (of the `"cache"`) whose source
/// is the failure, so its message stays in [`LockError::with_causes`].
///
/// ```
/// use lock_core::cache::CacheFailure;
/// use lock_core::LockError;
///
/// let elsewhere = LockError::from(CacheFailure::Elsewhere("origin down".into()));
/// assert!(elsewhere.is_unavailable());
/// assert!(elsewhere.with_causes().ends_with("origin down"));
/// ```
impl From<CacheFailure> for LockError {
    fn from(failure: CacheFailure) -> Self {
        match failure {
            CacheError::Lock(error) => error,
            CacheError::WaitTimedOut(after) => LockError::Timeout {
                backend: "cache",
                operation: "wait for another caller's computation",
                after,
            },
            CacheError::Decode(detail) => LockError::Protocol {
                backend: "cache",
                detail: format!("the stored value could not be decoded: {detail}"),
            },
            failure @ (CacheError::TooLarge { .. } | CacheError::Elsewhere(_)) => {
                LockError::unavailable("cache", failure)
            }
            CacheError::Compute(never) => match never {},
            CacheError::Shared(never) => match *never {},
        }
    }
}

/// A [`CacheFailure`] as an I/O error of the kind that fits it (`TimedOut` for a wait that
/// ran out, `InvalidData` for an undecodable value, a lock failure's own kind...), the
/// failure itself kept as its inner error.
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::CacheFailure;
///
/// let io = std::io::Error::from(CacheFailure::WaitTimedOut(Duration::from_secs(2)));
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// assert!(io.get_ref().is_some_and(|inner| inner.is::<CacheFailure>()));
/// ```
impl From<CacheFailure> for io::Error {
    fn from(failure: CacheFailure) -> Self {
        let kind = match &failure {
            CacheError::Lock(error) => crate::lock::fn_error::io_kind(error),
            CacheError::WaitTimedOut(_) => io::ErrorKind::TimedOut,
            CacheError::Decode(_) => io::ErrorKind::InvalidData,
            CacheError::TooLarge { .. } | CacheError::Elsewhere(_) => io::ErrorKind::Other,
            CacheError::Compute(never) => match *never {},
            CacheError::Shared(never) => match **never {},
        };
        io::Error::new(kind, failure)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_lock_failure_stays_itself_and_the_others_map_to_the_variant_that_fits() {
        let busy = LockError::Busy {
            key: "k".into(),
            waited: Duration::ZERO,
        };
        assert!(LockError::from(CacheFailure::Lock(busy)).is_busy());
        let waited = LockError::from(CacheFailure::WaitTimedOut(Duration::from_secs(1)));
        assert!(waited.is_timeout(), "{waited:?}");
        let decode = LockError::from(CacheFailure::Decode("bad json".into()));
        assert!(
            matches!(&decode, LockError::Protocol { detail, .. } if detail.contains("bad json"))
        );
        let large = LockError::from(CacheFailure::TooLarge { size: 9, limit: 4 });
        assert!(large.is_unavailable());
        assert!(large.with_causes().contains("9 bytes"), "{large:?}");
    }

    #[test]
    fn a_cache_failure_is_the_io_kind_that_fits_and_stays_inside() {
        let cases = [
            (
                CacheFailure::WaitTimedOut(Duration::from_secs(1)),
                io::ErrorKind::TimedOut,
            ),
            (CacheFailure::Decode("x".into()), io::ErrorKind::InvalidData),
            (CacheFailure::Elsewhere("x".into()), io::ErrorKind::Other),
            (
                CacheFailure::Lock(LockError::Busy {
                    key: "k".into(),
                    waited: Duration::ZERO,
                }),
                io::ErrorKind::WouldBlock,
            ),
        ];
        for (failure, kind) in cases {
            let message = failure.to_string();
            let io = io::Error::from(failure);
            assert_eq!((io.kind(), io.to_string()), (kind, message));
            assert!(io
                .into_inner()
                .is_some_and(|inner| inner.is::<CacheFailure>()));
        }
    }
}
