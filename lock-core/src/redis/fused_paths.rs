//! The one-round-trip paths a [`RedisResultStore`] offers with the [`RedisBackend`] it was
//! connected through ([`ResultStore::fused_with`](crate::results::ResultStore::fused_with)):
//! scripts that touch the store's entries and the backend's leases together (`lease_read.rs`,
//! `record_claim.rs`).

use super::record_claim::RecordPlace;
use super::{RedisBackend, RedisResultStore};
use crate::backend::{bind, AcquireRequest, BoxFuture, DynGrant};
use crate::results::{FusedPaths, GrantAndRead, RecordClaim, RecordEnd, RecordSeen};
use crate::{FencingToken, LockKey, OwnerToken, Result};

/// A store and its own backend: the same server, connection and lease book.
pub(crate) struct RedisFusedPaths {
    pub(crate) store: RedisResultStore,
}

impl RedisFusedPaths {
    fn backend(&self) -> &RedisBackend {
        self.store.backend()
    }
}

impl FusedPaths for RedisFusedPaths {
    fn acquire_then_read<'a>(
        &'a self,
        request: AcquireRequest<'a>,
        key: &'a LockKey,
    ) -> BoxFuture<'a, Result<GrantAndRead>> {
        Box::pin(async move {
            let entry = self.store.redis_key(key.full());
            let (grant, read) = self.backend().acquire_then_read(request, &entry).await?;
            Ok((grant.map(|grant| bind(self.backend(), grant)), read))
        })
    }

    fn claim_record<'a>(
        &'a self,
        request: AcquireRequest<'a>,
        claim: &'a RecordClaim<'a>,
    ) -> BoxFuture<'a, Result<(Option<DynGrant>, RecordSeen)>> {
        Box::pin(async move {
            let place = RecordPlace::of(&self.store, claim.key, claim.keep);
            let (grant, seen) = self.backend().claim_record(request, &place, claim).await?;
            Ok((grant.map(|grant| bind(self.backend(), grant)), seen))
        })
    }

    fn end_claim<'a>(
        &'a self,
        owner: OwnerToken,
        fence: FencingToken,
        end: &'a RecordEnd<'a>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let place = RecordPlace::of(&self.store, end.key, end.keep);
            self.backend().end_claim(&place, owner, fence, end).await
        })
    }
}
