//! The Redis keys of a fair lock, read-write lock, semaphore or election. Each is its own family
//! of keys (`prefix:fair:{#ns:key}`, `prefix:rw:{#ns:key}`, `prefix:sem:{#ns:key}`,
//! `prefix:leader:{#ns:key}`), apart from the lock `prefix:{#ns:key}`; all keys of one
//! primitive share its hash tag, so every script touches one Redis Cluster slot.

use crate::backend::LeaseKind;

/// Which primitive a lease kind belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    Fair,
    ReadWrite,
    Semaphore,
    /// An election: a fair lock's queue, whose holder's participant id is kept beside it.
    Leader,
}

impl Family {
    /// The family of `kind`; `None` for the lock.
    pub(super) fn of(kind: LeaseKind) -> Option<Self> {
        match kind {
            LeaseKind::Fair => Some(Self::Fair),
            LeaseKind::Read | LeaseKind::Write => Some(Self::ReadWrite),
            LeaseKind::Permits { .. } => Some(Self::Semaphore),
            LeaseKind::Leader => Some(Self::Leader),
            _ => None,
        }
    }

    /// The name the scripts know it by, also the key segment.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Fair => "fair",
            Self::ReadWrite => "rw",
            Self::Semaphore => "sem",
            Self::Leader => "leader",
        }
    }
}

/// The one-letter kind the scripts store with each lease, and the permits it holds.
pub(super) fn kind_code(kind: LeaseKind) -> (&'static str, u32) {
    match kind {
        LeaseKind::Read => ("R", 1),
        LeaseKind::Write => ("W", 1),
        LeaseKind::Permits { count, .. } => ("P", count),
        _ => ("F", 1),
    }
}

/// The keys of one primitive, in the order every primitive script takes them (see
/// `lua/primitive_lib.lua`).
#[derive(Clone, Debug)]
pub(super) struct PrimitiveKeys {
    pub(super) family: Family,
    /// Sorted set: owner token by lease expiry (server ms).
    pub(super) holders: String,
    /// Hash: owner token → `"<fence> <kind> <count>"`.
    pub(super) leases: String,
    /// The fencing counter, shared by every kind of lease of the primitive.
    pub(super) fence: String,
    /// Sorted set: queue entry by arrival sequence.
    pub(super) queue: String,
    /// Sorted set: queue entry by the time it is dropped unless its waiter re-checks.
    pub(super) deadlines: String,
    /// The semaphore's size; for an election, `"<owner token> <participant id>"` of its
    /// latest leader (written with the grant, read only while that owner holds).
    pub(super) size: String,
    /// Hash: owner token → `"<client id>|<label>"` of each holder, for the operator's view
    /// (its label) and a forced release (whom to tell).
    pub(super) labels: String,
}

impl PrimitiveKeys {
    pub(super) fn new(prefix: &str, family: Family, full_key: &str) -> Self {
        let holders = format!("{prefix}:{}:{{#{full_key}}}", family.name());
        Self {
            family,
            leases: format!("{holders}:leases"),
            fence: format!("{holders}:fence"),
            queue: format!("{holders}:queue"),
            deadlines: format!("{holders}:queue:deadline"),
            size: format!("{holders}:size"),
            labels: format!("{holders}:labels"),
            holders,
        }
    }

    /// The keys in script order.
    pub(super) fn all(&self) -> [&str; 7] {
        [
            &self.holders,
            &self.leases,
            &self.fence,
            &self.queue,
            &self.deadlines,
            &self.size,
            &self.labels,
        ]
    }
}

/// The keys of a count-down latch: its count and its waiters.
#[derive(Clone, Debug)]
pub(super) struct LatchKeys {
    pub(super) count: String,
    pub(super) waiters: String,
}

impl LatchKeys {
    pub(super) fn new(prefix: &str, full_key: &str) -> Self {
        let count = format!("{prefix}:latch:{{#{full_key}}}");
        Self {
            waiters: format!("{count}:waiters"),
            count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_primitive_shares_its_hash_tag() {
        let keys = PrimitiveKeys::new("lock", Family::Fair, "ns:we}ird");
        for key in keys.all() {
            assert!(key.starts_with("lock:fair:{#ns:we}ird}"), "{key}");
        }
        let latch = LatchKeys::new("lock", "ns:l");
        assert!(latch.waiters.starts_with(&latch.count));
    }
}
