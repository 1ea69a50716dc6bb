//! The semaphore's size and state ([`SemaphoreBackend`]), and the listing of a queue's range they
//! are read from (which `queue.rs` also counts waiters with).
//!
//! A semaphore's size is the key `size` in its queue's range (no lease: it outlives the
//! permits). The first acquisition creates it with the request's `limit` when absent;
//! [`set_permits`](SemaphoreBackend::set_permits) puts it, and since it lies in the
//! range waiting requests watch, a larger size wakes them.

use etcd_client as etcd;

use super::keys::{owner_of, parse_value, queue_prefix, size_key};
use super::EtcdBackend;
use crate::backend::queue_rule::permits_held;
use crate::backend::{LeaseKind, SemaphoreBackend, SemaphoreState};
use crate::{LockKey, Result};

/// The kind whose range a semaphore's keys live in.
const SEMAPHORE: LeaseKind = LeaseKind::Permits { count: 1, limit: 1 };

/// One queue as read: its entries' kinds and holding marks, and the size key's value.
pub(super) struct Listing {
    pub(super) entries: Vec<(LeaseKind, bool)>,
    size: Option<u32>,
}

impl EtcdBackend {
    /// Reads the queue of the primitive of `kind` named `key`.
    pub(super) async fn listing(&self, key: &LockKey, kind: LeaseKind) -> Result<Listing> {
        let prefix = queue_prefix(&self.shared.prefix, kind, key.full());
        let reply = self
            .call("read", |mut c| {
                let prefix = prefix.clone();
                async move {
                    c.get(prefix, Some(etcd::GetOptions::new().with_prefix()))
                        .await
                }
            })
            .await?;
        let size = size_key(&prefix);
        let mut listing = Listing {
            entries: Vec::new(),
            size: None,
        };
        for kv in reply.kvs() {
            if kv.key() == size.as_bytes() {
                listing.size = std::str::from_utf8(kv.value())
                    .ok()
                    .and_then(|v| v.parse().ok());
            } else if owner_of(&prefix, kv.key()).is_some() {
                listing.entries.push(parse_value(kv.value()));
            }
        }
        Ok(listing)
    }
}

impl SemaphoreBackend for EtcdBackend {
    async fn set_permits(&self, key: &LockKey, permits: u32) -> Result<()> {
        let size = size_key(&queue_prefix(&self.shared.prefix, SEMAPHORE, key.full()));
        self.call("set_permits", |mut c| {
            let size = size.clone();
            async move { c.put(size, permits.to_string(), None).await }
        })
        .await?;
        Ok(())
    }

    /// The semaphore's size and the permits of its holding entries.
    async fn semaphore_state(&self, key: &LockKey) -> Result<SemaphoreState> {
        let listing = self.listing(key, SEMAPHORE).await?;
        let held = permits_held(
            listing
                .entries
                .iter()
                .filter(|(_, holds)| *holds)
                .map(|(kind, _)| *kind),
        );
        Ok(SemaphoreState::new(listing.size, held))
    }
}
