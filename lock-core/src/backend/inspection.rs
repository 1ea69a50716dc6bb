//! What a store can tell an operator about one key: who holds it, who waits for it, and what
//! it cannot tell ([`KeyInspection`]); and a page of such answers ([`InspectionPage`]).

use std::time::{Duration, SystemTime};

use super::{HolderLabel, LeaseKind};
use crate::{FencingToken, LockError, OwnerToken, Result};

/// Which primitive a key is: each is its own namespace of keys in the store (the lock `k`, the
/// fair lock `k` and the semaphore `k` are three things).
///
/// ```
/// use lock_core::backend::{LeaseKind, Primitive};
///
/// assert_eq!(Primitive::of(LeaseKind::Write), Primitive::ReadWrite);
/// assert_eq!("semaphore".parse::<Primitive>()?, Primitive::Semaphore);
/// assert_eq!(Primitive::Fair.name(), "fair");
/// # Ok::<(), lock_core::LockError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Primitive {
    /// The lock ([`LeaseKind::Exclusive`]).
    Lock,
    /// The fair lock ([`LeaseKind::Fair`]).
    Fair,
    /// The read-write lock ([`LeaseKind::Read`] and [`LeaseKind::Write`]).
    ReadWrite,
    /// The semaphore ([`LeaseKind::Permits`]).
    Semaphore,
    /// The leader election ([`LeaseKind::Leader`]).
    Election,
    /// The count-down latch: no holders, a count (see [`LatchCount`]).
    Latch,
}

impl Primitive {
    /// Every primitive, in the order listings give them.
    pub const ALL: [Self; 6] = [
        Self::Lock,
        Self::Fair,
        Self::ReadWrite,
        Self::Semaphore,
        Self::Election,
        Self::Latch,
    ];

    /// The primitives whose holders hold leases (all but the latch), in listing order.
    pub const LEASED: [Self; 5] = [
        Self::Lock,
        Self::Fair,
        Self::ReadWrite,
        Self::Semaphore,
        Self::Election,
    ];

    /// The primitive a lease of `kind` belongs to.
    #[must_use]
    pub fn of(kind: LeaseKind) -> Self {
        match kind {
            LeaseKind::Fair => Self::Fair,
            LeaseKind::Read | LeaseKind::Write => Self::ReadWrite,
            LeaseKind::Permits { .. } => Self::Semaphore,
            LeaseKind::Leader => Self::Election,
            LeaseKind::Exclusive => Self::Lock,
        }
    }

    /// A lease kind of this primitive ([`of`](Self::of) it gives this primitive back): the
    /// read share for the read-write lock, one permit for the semaphore; `None` for the latch,
    /// which holds no lease. The stores keep a primitive's keys by the kinds of its leases;
    /// this names them for a primitive.
    pub(crate) fn lease_kind(self) -> Option<LeaseKind> {
        Some(match self {
            Self::Lock => LeaseKind::Exclusive,
            Self::Fair => LeaseKind::Fair,
            Self::ReadWrite => LeaseKind::Read,
            Self::Semaphore => LeaseKind::Permits { count: 1, limit: 1 },
            Self::Election => LeaseKind::Leader,
            Self::Latch => return None,
        })
    }

    /// Its name in listings, JSON and `lockctl`: `lock`, `fair`, `rw`, `semaphore`,
    /// `election`, `latch`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Lock => "lock",
            Self::Fair => "fair",
            Self::ReadWrite => "rw",
            Self::Semaphore => "semaphore",
            Self::Election => "election",
            Self::Latch => "latch",
        }
    }
}

impl std::fmt::Display for Primitive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Primitive {
    type Err = LockError;

    fn from_str(text: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| LockError::InvalidInput {
                what: "primitive",
                reason: format!(
                    "{:?} is none of lock, fair, rw, semaphore, election, latch",
                    text.chars().take(40).collect::<String>()
                ),
            })
    }
}

/// Whether a key is held, waited on, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyStatus {
    /// No holder and nobody queued.
    Free,
    /// At least one holder.
    Held,
    /// Waiters queued but no holder (a hand-over in progress, or waiters about to re-check).
    Queued,
    /// A count-down latch whose count is above zero: its waiters wait for it to reach zero.
    Counting,
}

impl KeyStatus {
    /// `free`, `held`, `queued` or `counting`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Free => "free",
            Self::Held => "held",
            Self::Queued => "queued",
            Self::Counting => "counting",
        }
    }
}

/// One holder of a key, as the store has it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HolderView {
    /// What it holds (for a semaphore, with its permit count).
    pub kind: LeaseKind,
    /// The lease's owner token (the one its guard holds; a forced release may name it).
    pub owner: OwnerToken,
    /// Who the holder said it is; `None` when the store has no label for it (a client of an
    /// older version, or a store that keeps none).
    pub label: Option<HolderLabel>,
    /// The lease's fencing token.
    pub fencing_token: FencingToken,
    /// When the lease was granted (the store's clock), when the store keeps it.
    pub acquired_at: Option<SystemTime>,
    /// How much of the lease is left, when the store can tell (a session-bound lease on
    /// ZooKeeper or a SQL advisory lock has none of its own).
    pub lease_left: Option<Duration>,
}

impl HolderView {
    /// A holder with no label, time of grant or lease left known.
    #[must_use]
    pub fn new(kind: LeaseKind, owner: OwnerToken, fencing_token: FencingToken) -> Self {
        Self {
            kind,
            owner,
            label: None,
            fencing_token,
            acquired_at: None,
            lease_left: None,
        }
    }
}

/// One waiter of a key, in queue order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaiterView {
    /// What it waits for, when the store says.
    pub kind: Option<LeaseKind>,
    /// Who the waiter said it is, when the store keeps it.
    pub label: Option<HolderLabel>,
    /// How long it has waited, when the store keeps its arrival time.
    pub waiting_for: Option<Duration>,
}

impl WaiterView {
    /// A waiter for a lease of `kind` (when known), with no label or wait time known.
    #[must_use]
    pub fn new(kind: Option<LeaseKind>) -> Self {
        Self {
            kind,
            label: None,
            waiting_for: None,
        }
    }
}

/// The waiters of a key, as far as the store can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Waiters {
    /// The queue, first waiter first.
    Listed(Vec<WaiterView>),
    /// The store keeps no queue: waiters wait in their own processes (PostgreSQL, MySQL) or
    /// on watches the store does not list (a latch's waiters on ZooKeeper and etcd), so it
    /// cannot say who waits, or whether anyone does.
    NotKept,
}

impl Waiters {
    /// The waiters listed (none when the store keeps no queue).
    #[must_use]
    pub fn listed(&self) -> &[WaiterView] {
        match self {
            Self::Listed(waiters) => waiters,
            Self::NotKept => &[],
        }
    }
}

/// A semaphore's permits: its size and how many are held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PermitUse {
    /// The semaphore's size, `None` when the store has none set yet.
    pub size: Option<u32>,
    /// Permits held under live leases.
    pub in_use: u32,
}

impl PermitUse {
    /// A semaphore of `size` permits (`None`: none set yet) with `in_use` held.
    #[must_use]
    pub fn new(size: Option<u32>, in_use: u32) -> Self {
        Self { size, in_use }
    }
}

/// A count-down latch's count, and how long until it expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatchCount {
    /// What is left to count down (above zero: a latch at zero is gone).
    pub count: u64,
    /// How long until the latch expires (and counts as zero), when the store can tell.
    pub expires_in: Option<Duration>,
}

impl LatchCount {
    /// A latch at `count`, expiring in `expires_in` when known.
    #[must_use]
    pub fn new(count: u64, expires_in: Option<Duration>) -> Self {
        Self { count, expires_in }
    }
}

/// What a store can tell about one key of one primitive, read at one moment.
///
/// Inspection is for people. Between the read and anything done with it the key may change
/// hands: code that must know whether it may act acquires the lock instead (a check then an
/// act is a race).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyInspection {
    /// The primitive.
    pub primitive: Primitive,
    /// The key: the full key (with its namespace) as a backend answers; the name under the
    /// client's namespace as [`LockAdmin`](crate::operator::LockAdmin) answers.
    pub key: String,
    /// Free, held or queued.
    pub status: KeyStatus,
    /// The holders (one for the exclusive kinds; readers or permit holders otherwise).
    pub holders: Vec<HolderView>,
    /// The waiters, or that the store keeps no queue.
    pub waiters: Waiters,
    /// For a semaphore: its size and the permits in use.
    pub permits: Option<PermitUse>,
    /// For a latch above zero: its count.
    pub latch: Option<LatchCount>,
}

impl KeyInspection {
    /// An inspection of `key` with `holders` and `waiters`; its status follows from them.
    #[must_use]
    pub fn new(
        primitive: Primitive,
        key: impl Into<String>,
        holders: Vec<HolderView>,
        waiters: Waiters,
    ) -> Self {
        let status = if !holders.is_empty() {
            KeyStatus::Held
        } else if waiters.listed().is_empty() {
            KeyStatus::Free
        } else {
            KeyStatus::Queued
        };
        Self {
            primitive,
            key: key.into(),
            status,
            holders,
            waiters,
            permits: None,
            latch: None,
        }
    }

    /// A latch's inspection: [`KeyStatus::Counting`] with its count (and `waiters`, where the
    /// store keeps them) while `count` is `Some`, [`KeyStatus::Free`] when there is none (at
    /// zero, expired or never made).
    #[must_use]
    pub fn latch(key: impl Into<String>, count: Option<LatchCount>, waiters: Waiters) -> Self {
        let mut seen = Self::new(Primitive::Latch, key, Vec::new(), waiters);
        if let Some(count) = count.filter(|c| c.count > 0) {
            seen.status = KeyStatus::Counting;
            seen.latch = Some(count);
        } else {
            seen.status = KeyStatus::Free;
            seen.waiters = Waiters::Listed(Vec::new());
        }
        seen
    }

    /// The same, with a semaphore's permits.
    #[must_use]
    pub fn with_permits(mut self, permits: PermitUse) -> Self {
        self.permits = Some(permits);
        self
    }
}

/// Where a listing goes on from: opaque text a page hands out, to pass back for the next one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ListCursor(String);

impl ListCursor {
    /// The cursor of a backend's own making (its text is the backend's business).
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text, to print or to hand back later (through [`ListCursor::new`]).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A request for one page of the keys held or waited on under a prefix.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ListRequest<'a> {
    /// Full keys starting with this (the namespace, a `:`, and the name's prefix).
    pub prefix: &'a str,
    /// Where the last page ended; `None` for the first page.
    pub cursor: Option<&'a ListCursor>,
    /// The most keys one page holds; a page may hold fewer and still not be the last.
    pub limit: usize,
}

impl<'a> ListRequest<'a> {
    /// The first page of up to `limit` keys under `prefix`.
    #[must_use]
    pub fn new(prefix: &'a str, limit: usize) -> Self {
        Self {
            prefix,
            cursor: None,
            limit,
        }
    }

    /// The page after the one that ended at `cursor`.
    #[must_use]
    pub fn after(mut self, cursor: &'a ListCursor) -> Self {
        self.cursor = Some(cursor);
        self
    }
}

/// One page of a listing: the keys held or waited on, each inspected, and where to go on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InspectionPage {
    /// The keys of this page, each as [`KeyInspection`] (never a free one).
    pub keys: Vec<KeyInspection>,
    /// Where the next page starts; `None` when this was the last.
    pub next: Option<ListCursor>,
}

impl InspectionPage {
    /// A page of `keys`, followed by the page at `next` if any.
    #[must_use]
    pub fn new(keys: Vec<KeyInspection>, next: Option<ListCursor>) -> Self {
        Self { keys, next }
    }
}

/// The most keys a listing page holds.
pub const MAX_LIST_LIMIT: usize = 1_000;

/// Checks a page size: 1 ..= [`MAX_LIST_LIMIT`].
pub(crate) fn validate_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_LIST_LIMIT {
        return Err(LockError::InvalidInput {
            what: "page size",
            reason: format!("{limit} is outside 1..={MAX_LIST_LIMIT}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_primitives_lease_kind_is_of_that_primitive() {
        for primitive in Primitive::LEASED {
            assert_eq!(Primitive::of(primitive.lease_kind().unwrap()), primitive);
        }
        assert_eq!(Primitive::Latch.lease_kind(), None);
    }
}
