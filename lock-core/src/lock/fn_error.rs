//! What a `#[distributed_lock]` fn's error type must be able to hold, and the conversion of
//! [`LockError`] into `std::io::Error` that lets such a fn return `std::io::Result`.

use std::io;

use crate::LockError;

/// An error type a `#[distributed_lock]` fn can return: one that holds a [`LockError`] (a busy
/// lock, a lost lease, an unreachable backend). Every `E: From<LockError>` is one, and so are
/// `LockError` itself, `std::io::Error` and `Box<dyn Error + Send + Sync>`; implement
/// `From<LockError>` for an error type of your own, never this trait.
///
/// ```
/// use lock_core::{LockError, LockFnError};
///
/// #[derive(Debug)]
/// enum AppError {
///     Lock(LockError),
/// }
///
/// impl From<LockError> for AppError {
///     fn from(error: LockError) -> Self {
///         Self::Lock(error)
///     }
/// }
///
/// let busy = LockError::InvalidConfig("no backend".into());
/// assert!(matches!(AppError::from_lock_error(busy), AppError::Lock(_)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a `#[distributed_lock]` failure (a busy lock, a lost lease, an unreachable backend)",
    label = "the fn's error type must implement `From<lock_core::LockError>`",
    note = "implement `From<lock_core::LockError>` for `{Self}`, or return `lock_core::LockError`, `std::io::Error` or `Box<dyn std::error::Error + Send + Sync>`"
)]
pub trait LockFnError: Sized {
    /// The fn's error for `error`.
    fn from_lock_error(error: LockError) -> Self;
}

impl<E: From<LockError>> LockFnError for E {
    fn from_lock_error(error: LockError) -> Self {
        E::from(error)
    }
}

/// A [`LockError`] as an I/O error of the kind that fits it (`WouldBlock` for a busy lock,
/// `TimedOut` for a backend's deadline, `InvalidInput` for bad input...), the `LockError`
/// itself kept as its inner error.
///
/// ```
/// use std::time::Duration;
/// use lock_core::LockError;
///
/// let busy = LockError::Busy { key: "order:7".into(), waited: Duration::ZERO };
/// let io = std::io::Error::from(busy);
/// assert_eq!(io.kind(), std::io::ErrorKind::WouldBlock);
/// assert!(io.get_ref().is_some_and(|inner| inner.is::<LockError>()));
/// ```
impl From<LockError> for io::Error {
    fn from(error: LockError) -> Self {
        io::Error::new(io_kind(&error), error)
    }
}

/// The I/O error kind a [`LockError`] is (exhaustive: a new variant decides here).
pub(crate) fn io_kind(error: &LockError) -> io::ErrorKind {
    match error {
        LockError::Busy { .. } => io::ErrorKind::WouldBlock,
        LockError::Timeout { .. } => io::ErrorKind::TimedOut,
        LockError::InvalidKey { .. }
        | LockError::InvalidDuration { .. }
        | LockError::InvalidConfig(_)
        | LockError::InvalidInput { .. } => io::ErrorKind::InvalidInput,
        LockError::Unsupported { .. } => io::ErrorKind::Unsupported,
        LockError::UpgradeRefused { .. } => io::ErrorKind::Deadlock,
        LockError::ForceReleaseRefused { .. } => io::ErrorKind::PermissionDenied,
        LockError::Protocol { .. } => io::ErrorKind::InvalidData,
        LockError::ShutDown => io::ErrorKind::NotConnected,
        LockError::Unavailable { .. } | LockError::LeaseLost { .. } => io::ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::LostReason;

    #[test]
    fn each_lock_error_is_the_io_kind_that_fits_and_stays_inside() {
        let cases = [
            (
                LockError::Busy {
                    key: "k".into(),
                    waited: Duration::ZERO,
                },
                io::ErrorKind::WouldBlock,
            ),
            (
                LockError::Timeout {
                    backend: "redis",
                    operation: "acquire",
                    after: Duration::from_secs(1),
                },
                io::ErrorKind::TimedOut,
            ),
            (
                LockError::InvalidConfig("x".into()),
                io::ErrorKind::InvalidInput,
            ),
            (
                LockError::unavailable("redis", "refused"),
                io::ErrorKind::Other,
            ),
            (
                LockError::LeaseLost {
                    key: "k".into(),
                    reason: LostReason::NotOwner,
                },
                io::ErrorKind::Other,
            ),
            (
                LockError::UpgradeRefused { key: "k".into() },
                io::ErrorKind::Deadlock,
            ),
        ];
        for (error, kind) in cases {
            let message = error.to_string();
            let io = io::Error::from(error);
            assert_eq!((io.kind(), io.to_string()), (kind, message));
            assert!(io.into_inner().is_some_and(|inner| inner.is::<LockError>()));
        }
    }
}
