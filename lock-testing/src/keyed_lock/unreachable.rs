//! [`Unreachable`]: a lock backend whose server cannot be reached.

use std::time::Duration;

use lock_core::backend::{Abandoned, AcquireRequest, Capabilities, Grant, LockBackend};
use lock_core::{LockError, Result};

/// A backend whose server cannot be reached: every call fails with
/// [`unavailable`](LockError::unavailable)`("unreachable", "connection refused")`, at once.
///
/// ```
/// use lock_testing::keyed_lock::Unreachable;
/// use lock_core::{LockClient, LockError};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let locks = LockClient::new(Unreachable);
/// let error = locks.lock("a").await.unwrap_err();
/// assert!(matches!(error, LockError::Unavailable { .. }), "{error}");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Unreachable;

impl Unreachable {
    fn refused() -> LockError {
        LockError::unavailable("unreachable", "connection refused")
    }
}

impl LockBackend for Unreachable {
    type Lease = ();

    fn capabilities(&self) -> Capabilities {
        Capabilities::new("unreachable")
    }

    async fn acquire(&self, _: AcquireRequest<'_>) -> Result<Option<Grant<()>>> {
        Err(Self::refused())
    }

    async fn renew(&self, (): &(), _: Option<Duration>) -> Result<bool> {
        Err(Self::refused())
    }

    async fn release(&self, (): &()) -> Result<bool> {
        Err(Self::refused())
    }

    async fn release_abandoned(&self, _: &Abandoned) -> Result<bool> {
        Err(Self::refused())
    }
}
