//! The claim in one round trip, for records in a [`RedisResultStore`] on the lock backend
//! itself: one script reads the record, takes the key's lease and marks the record in flight
//! under the new fence (`record_claim.lua`). A first request pays one round trip for the three
//! (instead of the read and the lease side by side, then the in-flight write), and a replay
//! pays for no lease at all (instead of one it took and gave back). The claim ends in one
//! more (`record_complete.lua`): the completed record (or the mark of a claim given up) is
//! written and the lease released together, so a first request costs two round trips.
//!
//! The lease is the lock's: the lock client adopts the grant, so the watchdog, the lost signal,
//! the clean-up of an abandoned claim and the metrics are the same as for a lease it asked for
//! itself. Used for [`InFlight::Conflict`](super::InFlight::Conflict) claims without
//! [`RecoveryPoints`](super::RecoveryPoints) (those look for a point beside the in-flight
//! write); waiting duplicates watch the record as before.

use std::any::Any;

use super::claim::{settled, Begin, Claim};
use super::record::Record;
use super::{Fingerprint, Idempotency};
use crate::backend::{bind, AcquireRequest, BoxFuture, DynGrant};
use crate::lock::request::AcquireAttempt;
use crate::redis::record_claim::{RecordClaim, RecordEnd, RecordPlace, RecordSeen};
use crate::results::{RedisResultStore, Replace, FENCE_DIGITS};
use crate::{FencingToken, LockError, LockGuard, LockKey, LockOwner, RedisBackend, Result};

/// Claims in one script, for a [`RedisResultStore`] on the idempotency client's own backend.
pub(crate) struct FusedClaim {
    store: RedisResultStore,
}

impl FusedClaim {
    /// When `store` is a [`RedisResultStore`] connected through `backend` itself (the same
    /// server, connection and lease book); `None` otherwise.
    pub(crate) fn between(store: &dyn Any, backend: &dyn Any) -> Option<Self> {
        RedisResultStore::on_backend(store, backend).map(|store| Self { store })
    }

    /// The Redis keys of `key`'s record and of its watchers.
    fn record_keys(&self, key: &LockKey) -> (String, String) {
        let record = self.store.redis_key(key.full());
        let watchers = format!("{record}:watchers");
        (record, watchers)
    }

    /// Where `key`'s record is (its keys from [`record_keys`](Self::record_keys)).
    fn place<'a>(
        &'a self,
        idempotency: &Idempotency,
        key: &'a LockKey,
        record: &'a str,
        watchers: &'a str,
    ) -> RecordPlace<'a> {
        RecordPlace {
            record,
            watchers,
            keep: idempotency.inner.retention,
            push_prefix: self.store.push_prefix(),
            key: key.full(),
        }
    }
}

impl FusedClaim {
    /// [`Idempotency::begin`] with [`InFlight::Conflict`](super::InFlight::Conflict), in one
    /// script.
    pub(super) async fn begin(
        &self,
        idempotency: &Idempotency,
        key: LockKey,
        fingerprint: Fingerprint,
    ) -> Result<Begin> {
        let (record, watchers) = self.record_keys(&key);
        let in_flight = Record::encode_in_flight(FencingToken::new(0), &fingerprint);
        let fingerprint_hex = fingerprint.to_hex();
        let mut attempt = Attempt {
            backend: self.store.backend(),
            claim: RecordClaim {
                place: self.place(idempotency, &key, &record, &watchers),
                in_flight: &in_flight,
                fingerprint: &fingerprint_hex,
            },
            seen: None,
        };
        let owner = LockOwner::new();
        let guard = idempotency
            .inner
            .locks
            .lock(key.name())
            .owner(&owner)
            .try_acquire_through(&mut attempt)
            .await?;
        let decoded = |bytes: Option<Vec<u8>>| -> Result<Option<Record>> {
            bytes.as_deref().map(Record::decode).transpose()
        };
        Ok(match (guard, attempt.seen) {
            (Some(guard), Some(RecordSeen::Claimed)) => {
                Begin::Run(Claim::new(idempotency, key, fingerprint, guard))
            }
            // The script tried no lease: the record answers (a replay, a 422).
            (_, Some(RecordSeen::Settled(bytes))) => settled(decoded(Some(bytes))?, fingerprint)
                .ok_or_else(|| LockError::Protocol {
                    backend: "idempotency",
                    detail: "the claim script took a record for settled that is not".to_owned(),
                })?,
            // Another request holds the key, or a newer claim wrote the record (this lease goes
            // back as the guard drops): a mismatch if the record says so, else in flight.
            (_, Some(RecordSeen::Busy(bytes))) => {
                settled(decoded(bytes)?, fingerprint).unwrap_or(Begin::InFlight)
            }
            (_, Some(RecordSeen::Newer(bytes))) => {
                settled(decoded(Some(bytes))?, fingerprint).unwrap_or(Begin::InFlight)
            }
            // Granted, but the reply came back after the lease could be trusted, and the lock
            // client gave it back: the record stays in flight under that fence, and a retry
            // claims the key anew.
            (None, Some(RecordSeen::Claimed)) => Begin::InFlight,
            (guard, None) => {
                drop(guard);
                return Err(LockError::Protocol {
                    backend: "idempotency",
                    detail: "the claim ended without an answer from its script".to_owned(),
                });
            }
        })
    }

    /// Ends a claim in one script: writes `entry` (the claim's completed record, or the mark
    /// of a claim given up) under `rule` and releases the claim's lease (`guard`'s) if it is
    /// still its; whether the record was written. The guard is left to the caller to
    /// [`abandon`](crate::LockGuard::abandon): the script released the lease, or, after an
    /// error, the lease is left to run out.
    pub(super) async fn end(
        &self,
        idempotency: &Idempotency,
        key: &LockKey,
        guard: &LockGuard,
        entry: &[u8],
        rule: Replace,
    ) -> Result<bool> {
        let (record, watchers) = self.record_keys(key);
        let fence = guard.fencing_token();
        let fence_digits = format!("{:0width$}", fence.get(), width = FENCE_DIGITS);
        let end = RecordEnd {
            place: self.place(idempotency, key, &record, &watchers),
            fence_digits: &fence_digits,
            entry,
            rule,
        };
        self.store
            .backend()
            .end_claim(key.full(), guard.owner_token(), fence, &end)
            .await
    }
}

/// The lease, asked of the claim script.
struct Attempt<'a> {
    backend: &'a RedisBackend,
    claim: RecordClaim<'a>,
    seen: Option<RecordSeen>,
}

impl AcquireAttempt for Attempt<'_> {
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let (grant, seen) = self.backend.claim_record(request, &self.claim).await?;
            self.seen = Some(seen);
            Ok(grant.map(|grant| bind(self.backend, grant)))
        })
    }
}
