//! The miss's lease and its second read in one round trip, for entries in a
//! [`RedisResultStore`] on the lease's own backend: the script that grants the computation
//! lease reads the entry right after (`acquire_then_read`), where the miss would otherwise
//! send the read on its own once granted. Another instance's outcome stored before the grant
//! is seen either way; the computing caller pays one round trip fewer before its
//! computation, and so does every caller waiting for it.
//!
//! The lease is the lock's: the lock client adopts the grant, so the watchdog, the lost
//! signal, the clean-up of an abandoned try and the metrics are the same as for a lease it
//! asked for itself.

use std::any::Any;

use crate::backend::{bind, AcquireRequest, BoxFuture, DynGrant};
use crate::lock::request::AcquireAttempt;
use crate::results::RedisResultStore;
use crate::{LockGuard, LockKey, LockRequest, RedisBackend, Result};

/// Leases read through in one script, for a [`RedisResultStore`] on the cache's own backend.
pub(crate) struct FusedLease {
    store: RedisResultStore,
}

impl FusedLease {
    /// When `store` is a [`RedisResultStore`] connected through `backend` itself; `None`
    /// otherwise.
    pub(crate) fn between(store: &dyn Any, backend: &dyn Any) -> Option<Self> {
        RedisResultStore::on_backend(store, backend).map(|store| Self { store })
    }

    /// Tries `request` (a plain lock's) once and, when granted, reads the entry of `key` in
    /// the same script: the guard and what the entry held right after the grant.
    pub(crate) async fn try_lease(
        &self,
        request: LockRequest<'_>,
        key: &LockKey,
    ) -> Result<Option<(LockGuard, Option<Vec<u8>>)>> {
        let entry = self.store.redis_key(key.full());
        let mut attempt = Attempt {
            backend: self.store.backend(),
            entry: &entry,
            read: None,
        };
        let guard = request.try_acquire_through(&mut attempt).await?;
        Ok(guard.map(|guard| (guard, attempt.read)))
    }
}

/// The lease, asked of the script that also reads the entry.
struct Attempt<'a> {
    backend: &'a RedisBackend,
    entry: &'a str,
    /// What the last try read (`None`: nothing there, or not granted).
    read: Option<Vec<u8>>,
}

impl AcquireAttempt for Attempt<'_> {
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let (grant, read) = self.backend.acquire_then_read(request, self.entry).await?;
            self.read = read;
            Ok(grant.map(|grant| bind(self.backend, grant)))
        })
    }
}
