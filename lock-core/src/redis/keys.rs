//! The Redis keys of one lock. All share one Redis Cluster hash tag, so every script touches a
//! single slot: `prefix:{#namespace:key}`. The `#` keeps the tag non-empty even for a key that
//! starts with `}` (Redis ignores an empty tag and would hash each key on its own).

/// The keys and channel names one lock uses.
#[derive(Clone, Debug)]
pub(super) struct LockKeys {
    /// Hash `{owner, fence}` with the lease as its TTL.
    pub(super) lock: String,
    /// The fencing counter; kept for a day after the last grant (see `FENCE_RETENTION`), or
    /// as long as the grants' `fence_retention` and `keep_fence` ask.
    pub(super) fence: String,
    /// Sorted set of waiter ids by arrival time.
    pub(super) waiters: String,
}

impl LockKeys {
    pub(super) fn new(prefix: &str, full_key: &str) -> Self {
        let lock = format!("{prefix}:{{#{full_key}}}");
        Self {
            fence: format!("{lock}:fence"),
            waiters: Self::waiters_of(&lock),
            lock,
        }
    }

    /// The waiter queue that goes with a lock hash key (as wake-up messages carry it).
    pub(super) fn waiters_of(lock: &str) -> String {
        format!("{lock}:waiters")
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
            assert_eq!(hash_tag(&keys.fence), tag);
            assert_eq!(hash_tag(&keys.waiters), tag);
            assert!(tag.starts_with('#'));
        }
    }
}
