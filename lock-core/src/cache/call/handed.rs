//! What a call takes from another caller (an outcome stored or pushed, a flight's landing)
//! and hands on to its own followers.

use std::time::{Duration, SystemTime};

use crate::cache::computed::{CallError, Outcome, SharedFailure};
use crate::cache::entry::{Age, Kind, StoredEntry};
use crate::cache::flight::{Landed, Landing};
use crate::cache::{CacheStatus, Cached};

/// The outcome another caller stored or pushed, as this caller's (`read`: found in the store,
/// not handed over as it happened); `None` when it is not this caller's to take (a value not
/// to be shared): it computes its own.
pub(super) fn landed_elsewhere<E>(entry: &StoredEntry, read: bool) -> Option<Outcome<E>> {
    let now = SystemTime::now();
    match entry.kind {
        Kind::Error => Some(Err(CallError::Shared(remembered(entry, read)))),
        Kind::Value => Some(Ok(cached(entry, CacheStatus::Collapsed, now))),
        Kind::FailedOver => {
            let kept = entry.value()?;
            let status = match kept.age(now) {
                Age::Fresh => CacheStatus::Collapsed,
                Age::Stale => CacheStatus::Stale,
                Age::StaleIfError => CacheStatus::StaleIfError,
                Age::Gone => return None,
            };
            Some(Ok(cached(&kept, status, now)))
        }
        Kind::Pass => None,
    }
}

/// The failure a stored (or pushed) `E` entry hands on (`read`: found in the store rather
/// than handed over; remembered only within its negative TTL).
pub(super) fn remembered(entry: &StoredEntry, read: bool) -> SharedFailure {
    SharedFailure {
        payload: entry.payload.clone(),
        remembered: read && !entry.fresh.is_zero(),
        failed_at: entry.stored_at,
        negative: entry.fresh,
        typed: None,
    }
}

pub(in crate::cache) fn cached(
    entry: &StoredEntry,
    status: CacheStatus,
    now: SystemTime,
) -> Cached<Vec<u8>> {
    Cached {
        value: entry.payload.clone(),
        status,
        stored_at: entry.stored_at,
        computed_in: entry.computed_in,
        fresh_for: entry.fresh_until().duration_since(now).unwrap_or_default(),
        fencing_token: Some(entry.fence),
    }
}

/// What a flight hands its followers.
pub(super) fn landing<E: std::fmt::Display>(outcome: &Outcome<E>) -> Landing {
    match outcome {
        Ok(value) => Ok(value.clone()),
        Err(CallError::Own {
            shared: Some(failure),
            ..
        })
        | Err(CallError::Shared(failure) | CallError::OwnShared(failure)) => {
            Err(Landed::Failure(failure.clone()))
        }
        Err(CallError::Own { error, .. } | CallError::Cache(error)) => {
            Err(Landed::Error(error.to_string()))
        }
    }
}

/// What a flight leader that computes a value of its own lands (a pass-through key, a value
/// not to be shared): nothing to share; each follower computes its own, with `status`.
pub(super) fn own_landing(status: CacheStatus) -> Cached<Vec<u8>> {
    Cached {
        value: Vec::new(),
        status,
        stored_at: SystemTime::now(),
        computed_in: Duration::ZERO,
        fresh_for: Duration::ZERO,
        fencing_token: None,
    }
}

/// A follower's view of its leader's value: computed by another caller is collapsed.
pub(super) fn as_follower(mut landed: Cached<Vec<u8>>) -> Cached<Vec<u8>> {
    if landed.status == CacheStatus::Computed {
        landed.status = CacheStatus::Collapsed;
    }
    landed
}
