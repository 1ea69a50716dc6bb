//! The embedded memory backend: the same lease semantics inside one process, no server.
//!
//! It is the default for examples, the first-run demo and unit tests. Leases expire on tokio's
//! clock (so paused-time tests work), a release wakes one waiter, and a loss is pushed to the
//! holder at once. It offers every primitive: the grant rules of each are in `memory/state.rs`,
//! the count-down latch in `memory/latch.rs`. It excludes tasks of one process only.

mod acquire;
mod defaults;
mod election;
mod latch;
mod operator;
mod queue;
mod result_store;
mod semaphore;
mod state;
mod stock;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use self::latch::Latches;
pub use self::result_store::MemoryResultStore;
use self::state::{Family, KeyState};
pub use self::stock::MemoryStock;
use crate::backend::LeaseKind;
use crate::sync::lock;
use crate::{LostReason, OwnerToken};

/// Locks (and fair locks, read-write locks, semaphores, latches) held in this process's memory.
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let first = locks.lock("k").await?;
/// first.release().await?;
/// let second = locks.lock("k").await?;
/// assert!(second.fencing_token() > lock_core::FencingToken::new(1));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
}

type Slot = (Family, String);

#[derive(Default)]
struct Shared {
    keys: Mutex<HashMap<Slot, KeyState>>,
    /// Semaphore sizes set so far; they outlive the semaphore's leases.
    sizes: Mutex<HashMap<String, u32>>,
    latches: Latches,
    /// One counter for every key: strictly increasing per key, and nothing to keep per key
    /// once it is idle.
    fences: AtomicU64,
    waiter_ids: AtomicU64,
    /// Told of every grant and release of a leadership, for the elections' observers.
    elections: tokio::sync::Notify,
    /// The audit records of forced releases, oldest first, each until it expires.
    audit: Mutex<std::collections::VecDeque<operator::Kept>>,
}

/// A lease held in a [`MemoryBackend`].
#[derive(Debug)]
pub struct MemoryLease {
    family: Family,
    key: String,
    owner: OwnerToken,
    fence: u64,
}

impl MemoryBackend {
    /// An empty backend.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Deletes `full_key`'s lock as an operator's `DEL` would on a server, firing the holder's
    /// lost signal. For fault-injection tests; returns whether a lock was held.
    pub fn simulate_external_delete(&self, full_key: &str) -> bool {
        self.simulate_external_delete_of(LeaseKind::Exclusive, full_key)
    }

    /// [`simulate_external_delete`](Self::simulate_external_delete) for the primitive of
    /// `kind` (every holder of it goes).
    pub fn simulate_external_delete_of(&self, kind: LeaseKind, full_key: &str) -> bool {
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&(Family::of(kind), full_key.to_owned())) else {
            return false;
        };
        let found = !state.holders.is_empty();
        for holder in state.holders.drain(..) {
            holder.loss.fire(LostReason::NotOwner);
        }
        state.wake_front();
        if kind == LeaseKind::Leader {
            self.shared.elections.notify_waiters();
        }
        found
    }

    /// How many waiters are queued on `full_key`'s lock (for tests that check nothing is left
    /// behind).
    #[must_use]
    pub fn waiter_count(&self, full_key: &str) -> usize {
        self.queued(Family::Lock, full_key)
    }

    /// How many keys have any state (held or waited on), every primitive counted.
    #[must_use]
    pub fn active_keys(&self) -> usize {
        lock(&self.shared.keys).len() + self.shared.latches.len()
    }
}
