//! The claim in one round trip, for records in a store that offers it with the lock backend
//! ([`FusedPaths`]; a `RedisResultStore` on the lock backend itself): one script reads the record, takes the key's lease and marks the record in flight
//! under the new fence (`record_claim.lua`). A first request pays one round trip for the three
//! (instead of the read and the lease side by side, then the in-flight write), and a replay
//! pays for no lease at all (instead of one it took and gave back). The claim ends in one
//! more (`record_complete.lua`): the completed record (or the mark of a claim given up) is
//! written and the lease released together, so a first request costs two round trips.
//!
//! The lease is the lock's: the lock client adopts the grant, so the watchdog, the lost signal,
//! the clean-up of an abandoned claim and the metrics are the same as for a lease it asked for
//! itself. Used for [`InFlight::Conflict`](super::InFlight::Conflict) claims without
//! recovery points (`lock_core::sql::RecoveryPoints`: those look for a point beside the in-flight
//! write); waiting duplicates watch the record as before.

use std::sync::Arc;

use super::claim::{settled, Begin, Claim};
use super::record::Record;
use super::{Fingerprint, Idempotency};
use crate::backend::{AcquireRequest, BoxFuture, DynGrant};
use crate::lock::request::AcquireAttempt;
use crate::results::{
    FusedPaths, RecordClaim, RecordEnd, RecordSeen, Replace, ResultStore, FENCE_DIGITS,
};
use crate::{FencingToken, LockBackend, LockError, LockGuard, LockKey, LockOwner, Result};

/// Claims in one call, through the paths a store offers with the idempotency client's backend.
pub(crate) struct FusedClaim {
    paths: Arc<dyn FusedPaths>,
}

impl FusedClaim {
    /// When `store` offers its one-call paths with `backend` (a `RedisResultStore` connected
    /// through `backend` itself); `None` otherwise.
    pub(crate) fn offered<S: ResultStore, B: LockBackend>(store: &S, backend: &B) -> Option<Self> {
        store.fused_with(backend).map(|paths| Self { paths })
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
        let in_flight = Record::encode_in_flight(FencingToken::new(0), &fingerprint);
        let fingerprint_hex = fingerprint.to_hex();
        let mut attempt = Attempt {
            paths: self.paths.as_ref(),
            claim: RecordClaim {
                key: &key,
                in_flight: &in_flight,
                fingerprint: &fingerprint_hex,
                keep: idempotency.inner.retention,
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
        let fence = guard.fencing_token();
        let fence_digits = format!("{:0width$}", fence.get(), width = FENCE_DIGITS);
        let end = RecordEnd {
            key,
            fence_digits: &fence_digits,
            entry,
            rule,
            keep: idempotency.inner.retention,
        };
        self.paths.end_claim(guard.owner_token(), fence, &end).await
    }
}

/// The lease, asked of the claim call.
struct Attempt<'a> {
    paths: &'a dyn FusedPaths,
    claim: RecordClaim<'a>,
    seen: Option<RecordSeen>,
}

impl AcquireAttempt for Attempt<'_> {
    fn attempt<'r>(
        &'r mut self,
        request: AcquireRequest<'r>,
    ) -> BoxFuture<'r, Result<Option<DynGrant>>> {
        Box::pin(async move {
            let (grant, seen) = self.paths.claim_record(request, &self.claim).await?;
            self.seen = Some(seen);
            Ok(grant)
        })
    }
}
