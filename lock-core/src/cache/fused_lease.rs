//! The miss's lease and its second read in one round trip, for a store that offers it with
//! the lease's own backend ([`FusedPaths`]; a `RedisResultStore` on that backend): the call
//! that grants the computation lease reads the entry right after, where the miss would
//! otherwise send the read on its own once granted. Another instance's outcome stored before
//! the grant is seen either way; the computing caller pays one round trip fewer before its
//! computation, and so does every caller waiting for it.
//!
//! The lease is the lock's: the lock client adopts the grant, so the watchdog, the lost
//! signal, the clean-up of an abandoned try and the metrics are the same as for a lease it
//! asked for itself.

use std::sync::Arc;

use crate::backend::{AcquireRequest, BoxFuture, DynGrant};
use crate::lock::request::AcquireAttempt;
use crate::results::{FusedPaths, ResultStore};
use crate::{LockBackend, LockGuard, LockKey, LockRequest, Result};

/// Leases read through in one call, through the paths a store offers with the cache's backend.
pub(crate) struct FusedLease {
    paths: Arc<dyn FusedPaths>,
}

impl FusedLease {
    /// When `store` offers its one-call paths with `backend`; `None` otherwise.
    pub(crate) fn offered<S: ResultStore, B: LockBackend>(store: &S, backend: &B) -> Option<Self> {
        store.fused_with(backend).map(|paths| Self { paths })
    }

    /// Tries `request` (a plain lock's) once and, when granted, reads the entry of `key` in
    /// the same call: the guard and what the entry held right after the grant.
    pub(crate) async fn try_lease(
        &self,
        request: LockRequest<'_>,
        key: &LockKey,
    ) -> Result<Option<(LockGuard, Option<Vec<u8>>)>> {
        let mut attempt = Attempt {
            paths: self.paths.as_ref(),
            entry: key,
            read: None,
        };
        let guard = request.try_acquire_through(&mut attempt).await?;
        Ok(guard.map(|guard| (guard, attempt.read)))
    }
}

/// The lease, asked of the call that also reads the entry.
struct Attempt<'a> {
    paths: &'a dyn FusedPaths,
    entry: &'a LockKey,
    /// What the last try read (`None`: nothing there, or not granted).
    read: Option<Vec<u8>>,
}

impl AcquireAttempt for Attempt<'_> {
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let (grant, read) = self.paths.acquire_then_read(request, self.entry).await?;
            self.read = read;
            Ok(grant)
        })
    }
}
