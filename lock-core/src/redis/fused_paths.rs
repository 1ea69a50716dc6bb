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

/// The Redis keys of `key`'s record and of its watchers.
fn record_keys(store: &RedisResultStore, key: &LockKey) -> (String, String) {
    let record = store.redis_key(key.full());
    let watchers = format!("{record}:watchers");
    (record, watchers)
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
            let (record, watchers) = record_keys(&self.store, claim.key);
            let place = RecordPlace {
                record: &record,
                watchers: &watchers,
                keep: claim.keep,
                push_prefix: self.store.push_prefix(),
                key: claim.key.full(),
            };
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
            let (record, watchers) = record_keys(&self.store, end.key);
            let place = RecordPlace {
                record: &record,
                watchers: &watchers,
                keep: end.keep,
                push_prefix: self.store.push_prefix(),
                key: end.key.full(),
            };
            self.backend().end_claim(&place, owner, fence, end).await
        })
    }
}
