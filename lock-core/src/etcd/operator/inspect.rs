//! Reading one primitive's queue for the operator: its range in create-revision order, in
//! pages of [`PAGE`] entries (at most [`MAX_PAGES`]), then the lease left of its first holders.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client as etcd;

use super::{MAX_LEASES_READ, MAX_WAITERS_LISTED};
use crate::backend::queue_rule::permits_held;
use crate::backend::{HolderView, KeyInspection, PermitUse, Primitive, WaiterView, Waiters};
use crate::etcd::keys::{entry_info, owner_of, queue_prefix, size_key, EntryInfo};
use crate::etcd::EtcdBackend;
use crate::{FencingToken, OwnerToken, Result};

/// Entries read per request.
const PAGE: i64 = 500;
/// The most pages one inspection reads: every holder among those entries is shown.
const MAX_PAGES: usize = 20;

/// One entry of a queue, as read.
pub(super) struct SeenEntry {
    /// Its key.
    pub(super) key: Vec<u8>,
    /// Its owner token (the key's last segment).
    pub(super) owner: OwnerToken,
    /// What its value says.
    pub(super) info: EntryInfo,
    /// Its mod revision: a holder's fencing token.
    pub(super) mod_revision: i64,
    /// The etcd lease it is under.
    pub(super) lease: i64,
}

/// One primitive's queue, as read.
pub(super) struct Seen {
    pub(super) primitive: Primitive,
    pub(super) full: String,
    /// The entries, in queue order.
    pub(super) entries: Vec<SeenEntry>,
    /// A semaphore's size.
    size: Option<u32>,
}

impl Seen {
    /// The holders, in queue order.
    pub(super) fn holders(&self) -> impl Iterator<Item = &SeenEntry> {
        self.entries.iter().filter(|entry| entry.info.holds)
    }
}

impl EtcdBackend {
    /// Reads the queue of `primitive` named `full`.
    pub(super) async fn read_queue(&self, primitive: Primitive, full: &str) -> Result<Seen> {
        // The latch holds no lease (it is read apart, `latch.rs`): its kind names no queue.
        let kind = primitive
            .lease_kind()
            .unwrap_or(crate::backend::LeaseKind::Exclusive);
        let prefix = queue_prefix(&self.shared.prefix, kind, full);
        let size = size_key(&prefix);
        let mut seen = Seen {
            primitive,
            full: full.to_owned(),
            entries: Vec::new(),
            size: None,
        };
        let mut after = 0;
        for _ in 0..MAX_PAGES {
            let options = etcd::GetOptions::new()
                .with_prefix()
                .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend)
                .with_min_create_revision(after + 1)
                .with_limit(PAGE);
            let reply = self
                .call("inspect", |mut c| {
                    let (prefix, options) = (prefix.clone(), options.clone());
                    async move { c.get(prefix, Some(options)).await }
                })
                .await?;
            for kv in reply.kvs() {
                after = after.max(kv.create_revision());
                if kv.key() == size.as_bytes() {
                    seen.size = std::str::from_utf8(kv.value())
                        .ok()
                        .and_then(|v| v.parse().ok());
                } else if let Some(owner) = owner_of(&prefix, kv.key()) {
                    seen.entries.push(SeenEntry {
                        key: kv.key().to_vec(),
                        owner,
                        info: entry_info(kv.value()),
                        mod_revision: kv.mod_revision(),
                        lease: kv.lease(),
                    });
                }
            }
            if !reply.more() {
                break;
            }
        }
        Ok(seen)
    }

    /// What the operator is shown of `seen`: the lease left of its first holders asked of
    /// etcd (`None` where that fails or the lease is gone).
    pub(super) async fn inspection(&self, seen: &Seen) -> KeyInspection {
        let now = SystemTime::now();
        let mut holders = Vec::new();
        for (index, entry) in seen.holders().enumerate() {
            let mut view = HolderView::new(entry.info.kind, entry.owner, token_of(entry));
            view.label.clone_from(&entry.info.label);
            view.acquired_at = entry.info.granted_ms.map(unix_ms);
            if index < MAX_LEASES_READ && entry.lease != 0 {
                view.lease_left = self.lease_left(entry.lease).await;
            }
            holders.push(view);
        }
        let waiters = seen
            .entries
            .iter()
            .filter(|entry| !entry.info.holds)
            .take(MAX_WAITERS_LISTED)
            .map(|entry| {
                let mut view = WaiterView::new(Some(entry.info.kind));
                view.label.clone_from(&entry.info.label);
                view.waiting_for = entry
                    .info
                    .arrived_ms
                    .map(|ms| now.duration_since(unix_ms(ms)).unwrap_or_default());
                view
            })
            .collect();
        let inspection = KeyInspection::new(
            seen.primitive,
            seen.full.clone(),
            holders,
            Waiters::Listed(waiters),
        );
        if seen.primitive != Primitive::Semaphore {
            return inspection;
        }
        let in_use = permits_held(seen.holders().map(|entry| entry.info.kind));
        inspection.with_permits(PermitUse::new(seen.size, in_use))
    }

    /// The time to live of the etcd lease `id`, if it is alive.
    async fn lease_left(&self, id: i64) -> Option<Duration> {
        let reply = self
            .call("inspect", |mut c| async move {
                c.lease_time_to_live(id, None).await
            })
            .await
            .ok()?;
        u64::try_from(reply.ttl())
            .ok()
            .filter(|ttl| *ttl > 0)
            .map(Duration::from_secs)
    }
}

/// A holder's fencing token: its entry's mod revision.
pub(super) fn token_of(entry: &SeenEntry) -> FencingToken {
    // A revision is never negative; the fallback only keeps a corrupt reply from panicking.
    FencingToken::new(u64::try_from(entry.mod_revision).unwrap_or_default())
}

/// A time in unix milliseconds.
pub(super) fn unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}
