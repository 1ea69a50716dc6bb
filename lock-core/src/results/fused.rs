//! One-round-trip paths a result store may offer together with the lock backend its leases
//! are taken on: a lease and a read of the entry in one call (the cache's miss), an
//! idempotency claim in one call (read the record, take the lease, mark the record in flight)
//! and its end in another (write the record, release the lease).
//!
//! A store declares them with [`ResultStore::fused_with`](super::ResultStore::fused_with)
//! (the Redis driver does, for a `RedisResultStore` connected through the very backend the
//! leases are on); the cache and the idempotency client take them when offered and go the
//! separate way otherwise. The leases are the lock's: the lock client adopts the grants, so
//! the watchdog, the lost signal and the metrics are the same as for a lease it asked for.

use std::time::Duration;

use super::Replace;
use crate::backend::{AcquireRequest, BoxFuture, DynGrant};
use crate::{FencingToken, LockKey, OwnerToken, Result};

/// A grant (when the lease was taken) and what the entry held right after it.
#[doc(hidden)]
pub type GrantAndRead = (Option<DynGrant>, Option<Vec<u8>>);

/// The paths a store offers with one lock backend (see the [module docs](self)).
#[doc(hidden)]
pub trait FusedPaths: Send + Sync {
    /// Tries `request` (a plain lock's lease) once and, when it is granted, reads the entry of
    /// `key` in the same call: the grant, if any, and what the entry held right after it.
    fn acquire_then_read<'a>(
        &'a self,
        request: AcquireRequest<'a>,
        key: &'a LockKey,
    ) -> BoxFuture<'a, Result<GrantAndRead>>;

    /// An idempotency claim in one call: reads the record of `claim.key` and, unless it
    /// settles the request, takes `request`'s lease and writes the record in flight under the
    /// new fence. The grant (when the lease was taken) and what was found of the record.
    fn claim_record<'a>(
        &'a self,
        request: AcquireRequest<'a>,
        claim: &'a RecordClaim<'a>,
    ) -> BoxFuture<'a, Result<(Option<DynGrant>, RecordSeen)>>;

    /// Ends a claim in one call: writes `end.entry` (if `end.rule` lets it replace the record
    /// there) and releases the lease of `end.key` held by `owner` under `fence`, if it still
    /// is. Whether the record was written.
    fn end_claim<'a>(
        &'a self,
        owner: OwnerToken,
        fence: FencingToken,
        end: &'a RecordEnd<'a>,
    ) -> BoxFuture<'a, Result<bool>>;
}

/// The record side of a one-call claim.
#[doc(hidden)]
pub struct RecordClaim<'a> {
    /// The record's key (the idempotency client's, `namespace:key`).
    pub key: &'a LockKey,
    /// The in-flight record, its fence digits to be filled in by the store.
    pub in_flight: &'a [u8],
    /// This request's fingerprint, in hex.
    pub fingerprint: &'a str,
    /// How long the record is kept (at least a millisecond).
    pub keep: Duration,
}

/// What a one-call claim found of the record.
#[doc(hidden)]
#[derive(Debug)]
pub enum RecordSeen {
    /// The record settles the request (completed, or in flight with another fingerprint);
    /// no lease was tried.
    Settled(Vec<u8>),
    /// Another request holds the lease; the record, if there is one.
    Busy(Option<Vec<u8>>),
    /// Granted: the record is in flight under the grant's fence.
    Claimed,
    /// Granted, but the record is a newer claim's: the lease is to be given back.
    Newer(Vec<u8>),
}

/// The record a claim ends with, as the store would put it.
#[doc(hidden)]
pub struct RecordEnd<'a> {
    /// The record's key (also the lease's).
    pub key: &'a LockKey,
    /// The claim's fence, as records encode it.
    pub fence_digits: &'a str,
    /// The record to write.
    pub entry: &'a [u8],
    /// Whether a record of the same fence may be replaced (`OlderOrSame`) or only older ones.
    pub rule: Replace,
    /// How long the record is kept (at least a millisecond).
    pub keep: Duration,
}
