//! Results that travel with the lock: where a computed result is stored, conditionally on
//! the fencing token of the claim that computed it, and how it reaches the processes waiting
//! for it (by push, not by polling).
//!
//! The stampede [`cache`](crate::cache) and the [`idempotency`](crate::idempotency) records
//! are two policies over these stores: a key is claimed under a fenced lease, the winner
//! computes, the store keeps its result only if no newer claim has stored, and everyone
//! waiting receives it. This module holds the trait and the entry format; the stores are in
//! their drivers: [`MemoryResultStore`](crate::memory::MemoryResultStore) serves one
//! process; `lock_core::redis::RedisResultStore` (feature `redis`) and
//! `lock_core::sql::PostgresResultStore` (feature `postgres`) share results across instances.
//!
//! ```
//! use lock_core::cache::Cache;
//! use lock_core::memory::MemoryResultStore;
//! use lock_core::MemoryBackend;
//!
//! let store = MemoryResultStore::new();
//! let cache = Cache::builder(store.clone(), MemoryBackend::new()).namespace("shop").build().unwrap();
//! # let _ = cache;
//! ```
//!
//! Every stored entry starts with the same header, which is all a store reads of it:
//!
//! ```text
//! lc1 K 00000000000000000042 ...
//!  │  │ └ fencing token of the claim that stored it, 20 digits (compares as text)
//!  │  └ kind: one byte; `C` (a completed idempotency record) is final: never replaced
//!  └ version
//! ```

#[cfg(any(feature = "postgres", feature = "mysql"))]
mod commit_place;
mod fused;
mod put_entry;
pub(crate) mod response;
mod store;

#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) use self::commit_place::sealed::Sealed as CommitPlaceSealed;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use self::commit_place::CommitPlace;
pub use self::fused::{FusedPaths, GrantAndRead, RecordClaim, RecordEnd, RecordSeen};
pub use self::put_entry::PutEntry;
pub use self::response::{StoredResponse, StoredResponseError};
pub use self::store::{DynResultStore, Replace, ResultStore, ValueWatch, Watchers};

/// The version that opens every entry's header.
pub(crate) const VERSION: &str = "lc1";
/// Where the kind byte is in an encoded entry (after `lc1 `).
pub(crate) const KIND_AT: usize = 4;
/// Where the fence starts in an encoded entry (after `lc1 K `), for store scripts.
pub(crate) const FENCE_AT: usize = 6;
/// The fence's width in an encoded entry.
pub(crate) const FENCE_DIGITS: usize = 20;
/// The kind of an entry no put replaces (a completed idempotency record).
pub(crate) const FINAL_KIND: u8 = b'C';

/// Whether a put of an entry with `fence_digits` under `rule` may replace `there`.
pub(crate) fn may_replace(there: &[u8], fence_digits: &str, rule: Replace) -> bool {
    if there.get(KIND_AT) == Some(&FINAL_KIND) {
        return false;
    }
    let Some(their_fence) = there.get(FENCE_AT..FENCE_AT + FENCE_DIGITS) else {
        // Not an entry of ours: whatever wrote it, a fenced put may take its place.
        return true;
    };
    match rule {
        Replace::Older => their_fence < fence_digits.as_bytes(),
        Replace::OlderOrSame => their_fence <= fence_digits.as_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replace_rules() {
        let five = format!("{:020}", 5);
        let entry = |kind: char, fence: u64| format!("lc1 {kind} {fence:020} rest").into_bytes();
        assert!(may_replace(&entry('V', 4), &five, Replace::Older));
        assert!(!may_replace(&entry('V', 5), &five, Replace::Older));
        assert!(may_replace(&entry('I', 5), &five, Replace::OlderOrSame));
        assert!(!may_replace(&entry('I', 6), &five, Replace::OlderOrSame));
        assert!(!may_replace(&entry('C', 1), &five, Replace::OlderOrSame));
        assert!(may_replace(b"junk", &five, Replace::Older));
    }
}
