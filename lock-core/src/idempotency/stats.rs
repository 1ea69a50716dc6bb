//! Counts of what idempotent requests came to, per [`Idempotency`](super::Idempotency): the
//! figures to export as metrics.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many requests came to each outcome, since the [`Idempotency`](super::Idempotency) was
/// built (all its clones together); from [`Idempotency::stats`](super::Idempotency::stats).
///
/// ```
/// use lock_core::idempotency::Idempotency;
///
/// let payments = Idempotency::memory("payments").unwrap();
/// assert_eq!(payments.stats().executed, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdempotencyStats {
    /// Requests that claimed their key and ran.
    pub executed: u64,
    /// Duplicates answered with a completed request's response.
    pub replayed: u64,
    /// Duplicates answered 409 because the first request was still running.
    pub in_flight: u64,
    /// Keys reused with another request (422).
    pub mismatched: u64,
    /// Requests refused before anything ran for a missing or invalid key, or a body over the
    /// limit (400, 413).
    pub rejected: u64,
    /// Requests refused because the store or the lock backend failed (503; nothing ran).
    pub unavailable: u64,
    /// Handlers cancelled because their claim's lease was lost (503).
    pub lost: u64,
    /// Completions refused because a newer claim had taken the key over.
    pub superseded: u64,
    /// Completed responses that could not be stored (the claim was left to expire).
    pub store_failed: u64,
}

/// The live counters behind [`IdempotencyStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) executed: AtomicU64,
    pub(crate) replayed: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) mismatched: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) unavailable: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) superseded: AtomicU64,
    pub(crate) store_failed: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> IdempotencyStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        IdempotencyStats {
            executed: read(&self.executed),
            replayed: read(&self.replayed),
            in_flight: read(&self.in_flight),
            mismatched: read(&self.mismatched),
            rejected: read(&self.rejected),
            unavailable: read(&self.unavailable),
            lost: read(&self.lost),
            superseded: read(&self.superseded),
            store_failed: read(&self.store_failed),
        }
    }
}
