//! The Redis keys of one lock. All share one Redis Cluster hash tag, so every script touches a
//! single slot: `prefix:{#namespace:key}`. The `#` keeps the tag non-empty even for a key that
//! starts with `}` (Redis ignores an empty tag and would hash each key on its own).

use std::sync::Arc;

/// The keys one lock uses: the lock's own, and two beside it that share its text.
///
/// Only the lock key is kept (shared, so the lease and the lease book hold it without a copy);
/// the fencing counter and the waiter queue are the lock key with a suffix, which a script
/// call writes straight after it ([`ScriptCall::key_from_parts`](super::script_call::ScriptCall::key_from_parts)).
#[derive(Clone, Debug)]
pub(super) struct LockKeys {
    /// Hash `{owner, fence}` with the lease as its TTL.
    pub(super) lock: Arc<str>,
}

/// The fencing counter's suffix; kept for a day after the last grant (see `FENCE_RETENTION`),
/// or as long as the grants' `fence_retention` and `keep_fence` ask.
const FENCE: &str = ":fence";
/// The waiter queue's suffix: a sorted set of waiter ids by arrival time.
const WAITERS: &str = ":waiters";
/// The audit stream's suffix: the forced releases of every primitive of the key (they share
/// its hash tag), kept for their retention.
pub(super) const AUDIT: &str = ":audit";

impl LockKeys {
    pub(super) fn new(prefix: &str, full_key: &str) -> Self {
        let mut lock = String::with_capacity(prefix.len() + full_key.len() + 4);
        lock.push_str(prefix);
        lock.push_str(":{#");
        lock.push_str(full_key);
        lock.push('}');
        Self {
            lock: Arc::from(lock),
        }
    }

    /// The fencing counter, in parts.
    pub(super) fn fence(&self) -> [&str; 2] {
        [&self.lock, FENCE]
    }

    /// The waiter queue, in parts.
    pub(super) fn waiters(&self) -> [&str; 2] {
        [&self.lock, WAITERS]
    }

    /// The waiter queue, as one string.
    pub(super) fn waiters_key(&self) -> String {
        Self::waiters_of(&self.lock)
    }

    /// The waiter queue that goes with a lock hash key (as wake-up messages carry it).
    pub(super) fn waiters_of(lock: &str) -> String {
        format!("{lock}{WAITERS}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Redis Cluster hash tag: the text between the first `{` and the first `}` after it.
    fn hash_tag(key: &str) -> &str {
        let open = key.find('{').unwrap();
        let close = key[open + 1..].find('}').unwrap() + open + 1;
        &key[open + 1..close]
    }

    #[test]
    fn all_keys_share_one_hash_tag_even_with_braces_in_the_key() {
        for key in ["ns:order:1", "ns:we}ird{key", "}", "{}"] {
            let keys = LockKeys::new("lock", key);
            let tag = hash_tag(&keys.lock);
            assert_eq!(hash_tag(&keys.fence().concat()), tag);
            assert_eq!(hash_tag(&keys.waiters_key()), tag);
            assert_eq!(keys.waiters().concat(), keys.waiters_key());
            assert!(tag.starts_with('#'));
        }
    }
}
