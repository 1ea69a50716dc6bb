//! Resources that check fencing tokens: a lock's guarantee ends where its lease does, and a
//! holder paused past its lease (a GC pause, a stopped VM, a slow network) can still act. The
//! resource it writes to can refuse that write if it remembers the largest fencing token it
//! has accepted and refuses smaller ones (Martin Kleppmann, "How to do distributed locking").
//! A token nobody checks protects nothing.
//!
//! - `lock_core::sql::FencedUpdate<D>` (features `postgres`, `mysql`): the SQL pattern, a
//!   conditional `UPDATE` over a 64-bit token column, built for PostgreSQL or MySQL from
//!   checked identifiers.
//! - `RedisFencedStore` (feature `redis`): a Redis value written only if the writer's token is
//!   at least the largest one seen for it, in one script.
//!
//! Each answers a write with a [`FencedWrite`].

use crate::FencingToken;

/// What a fenced resource did with a write.
///
/// ```
/// use lock_core::fenced::FencedWrite;
/// use lock_core::FencingToken;
///
/// let refused = FencedWrite::Refused { newest: FencingToken::new(9) };
/// assert!(!refused.is_accepted());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FencedWrite {
    /// The token was at least the largest seen: the write is in.
    Accepted,
    /// A write with a larger token came first: this one is stale and changed nothing.
    Refused {
        /// The largest token the resource has accepted.
        newest: FencingToken,
    },
}

impl FencedWrite {
    /// True for [`FencedWrite::Accepted`].
    #[must_use]
    pub fn is_accepted(self) -> bool {
        matches!(self, Self::Accepted)
    }
}
