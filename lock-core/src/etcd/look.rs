//! The queue as one acquisition reads it, in create-revision order, and what
//! [`queue_rule::admit`](crate::backend::queue_rule::admit) makes of it.
//!
//! A lock or a fair lock reads only its own entry and the one just ahead of it: the rule
//! needs no more (one holder, at the front; nobody behind holds), and a crowd of `n` waiters
//! each holding the whole queue kept O(n²) in memory: 1,000 waiters on one key cost the
//! worker +165 MB (`cargo xtask chaos --scenario 10`). A read-write lock and a semaphore read
//! the whole queue (a downgraded read behind a writer, the permits of everyone ahead).

use etcd_client as etcd;

use super::keys::{entry_key, entry_value, owner_of, parse_value, size_key, Extra};
use super::queue::Queued;
use super::EtcdBackend;
use crate::backend::queue_rule::{admit, Admission, QueueEntry};
use crate::backend::{AcquireRequest, LeaseKind};
use crate::Result;

/// One entry of the queue as read.
pub(super) struct Entry {
    pub(super) key: Vec<u8>,
    rule: QueueEntry,
}

/// The queue, ours included, as read.
pub(super) struct Look {
    pub(super) entries: Vec<Entry>,
    me: usize,
    /// The semaphore's size key, when it exists.
    pub(super) size: Option<u32>,
}

/// What one acquisition works with.
pub(super) struct Spec<'r, 'k> {
    pub(super) request: &'r AcquireRequest<'k>,
    pub(super) prefix: String,
    pub(super) key: String,
    /// The entry's value while it waits (with the request's label and time).
    pub(super) waiting: String,
    /// When the request was made, in unix milliseconds.
    arrived_ms: u64,
}

impl<'r, 'k> Spec<'r, 'k> {
    /// The entry key and values of `request` in the queue `prefix`.
    pub(super) fn new(request: &'r AcquireRequest<'k>, prefix: String) -> Self {
        let arrived_ms = unix_ms_now();
        let extra = Extra {
            arrived_ms: Some(arrived_ms),
            granted_ms: None,
            label: request.label,
            participant: request.participant,
        };
        Self {
            key: entry_key(&prefix, request.owner),
            waiting: entry_value(request.owner, request.kind, false, extra),
            arrived_ms,
            prefix,
            request,
        }
    }

    /// The entry's value once it holds, granted now: the waiting value with the holding mark
    /// and the time of the grant.
    pub(super) fn holding(&self) -> String {
        let extra = Extra {
            arrived_ms: Some(self.arrived_ms),
            granted_ms: Some(unix_ms_now()),
            label: self.request.label,
            participant: self.request.participant,
        };
        entry_value(self.request.owner, self.request.kind, true, extra)
    }

    /// Whether the request is for permits.
    pub(super) fn is_semaphore(&self) -> bool {
        matches!(self.request.kind, LeaseKind::Permits { .. })
    }

    /// Whether the rule needs only our entry and the one just ahead of it (a lock, a fair lock,
    /// an election): one holder, at
    /// the front, and no holder behind it (that is a read-write lock's downgraded read).
    fn reads_neighbour(&self) -> bool {
        matches!(
            self.request.kind,
            LeaseKind::Exclusive | LeaseKind::Fair | LeaseKind::Leader
        )
    }

    /// The range read of the queue: for a lock or a fair lock, the two newest entries created
    /// at or before `through` (our entry's create revision; `None` when ours was just put, in
    /// the same transaction, and so is the newest): ours and the one just ahead. For the other
    /// kinds, the whole queue by create revision.
    pub(super) fn range(&self, through: Option<i64>) -> etcd::TxnOp {
        if !self.reads_neighbour() {
            return self.whole_range();
        }
        let mut options = etcd::GetOptions::new()
            .with_prefix()
            .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Descend)
            .with_limit(2);
        if let Some(through) = through {
            options = options.with_max_create_revision(through);
        }
        etcd::TxnOp::get(self.prefix.clone(), Some(options))
    }

    /// The range read of the whole queue, by create revision.
    fn whole_range(&self) -> etcd::TxnOp {
        let options = etcd::GetOptions::new()
            .with_prefix()
            .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend);
        etcd::TxnOp::get(self.prefix.clone(), Some(options))
    }

    /// The read of the semaphore's size key.
    pub(super) fn size_read(&self) -> etcd::TxnOp {
        etcd::TxnOp::get(size_key(&self.prefix), None)
    }
}

impl Look {
    /// What the rule says of our entry; `size` is the semaphore's size (when the look found
    /// none, the caller creates it first).
    pub(super) fn admission(&self, spec: &Spec<'_, '_>) -> Result<Admission> {
        let rule: Vec<QueueEntry> = self.entries.iter().map(|e| e.rule).collect();
        admit(
            &rule,
            self.me,
            self.size.unwrap_or(0),
            spec.request.downgrade_from,
        )
    }
}

impl EtcdBackend {
    /// Reads our entry, the queue around it (see [`Spec::range`]) and (for a semaphore) the
    /// size: `None` when our entry is gone.
    pub(super) async fn look(&self, spec: &Spec<'_, '_>, queued: &Queued) -> Result<Option<Look>> {
        match self.look_reading(spec, queued, false).await? {
            Some(None) => self.look_whole(spec, queued).await,
            read => Ok(read.flatten()),
        }
    }

    /// [`look`](Self::look), reading the whole queue whatever the kind: where a read of two
    /// did not show the queue around our entry (see [`read_look`]).
    pub(super) async fn look_whole(
        &self,
        spec: &Spec<'_, '_>,
        queued: &Queued,
    ) -> Result<Option<Look>> {
        Ok(self.look_reading(spec, queued, true).await?.flatten())
    }

    /// One look: `None` when our entry is gone, `Some(None)` when the read does not show the
    /// queue around it (see [`read_look`]). `whole`: read the whole queue whatever the kind.
    async fn look_reading(
        &self,
        spec: &Spec<'_, '_>,
        queued: &Queued,
        whole: bool,
    ) -> Result<Option<Option<Look>>> {
        let own = queued.key.clone();
        let range = if whole {
            spec.whole_range()
        } else {
            spec.range(Some(queued.create_revision))
        };
        let size = spec.size_read();
        let reply = self
            .call("acquire", |mut c| {
                let ops = vec![
                    etcd::TxnOp::get(own.clone(), None),
                    range.clone(),
                    size.clone(),
                ];
                let txn = etcd::Txn::new().and_then(ops);
                async move { c.txn(txn).await }
            })
            .await?;
        let gets = gets(&reply);
        let ours = gets
            .first()
            .and_then(|get| get.kvs().first())
            .is_some_and(|kv| kv.create_revision() == queued.create_revision);
        if !ours {
            return Ok(None);
        }
        Ok(Some(read_look(
            spec,
            queued.create_revision,
            gets.get(1),
            gets.get(2),
            whole,
        )))
    }
}

/// The time now in unix milliseconds (the client's clock: what an entry records).
pub(super) fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The get results of a transaction, in order.
pub(super) fn gets(reply: &etcd::TxnResponse) -> Vec<etcd::GetResponse> {
    reply
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            etcd::TxnOpResponse::Get(get) => Some(get),
            _ => None,
        })
        .collect()
}

/// The queue from a range read (and the size from its read): of [`Spec::range`], or of the
/// whole queue (`whole`). `None` when the read does not show the queue around our entry, and
/// the queue is to be read whole: our entry is not in it at `create_revision` (gone, or, in a
/// read of two, not the newer of the two), or a read of two holds a key that is no entry of
/// ours (written by something else), which may hide the entry just ahead; reading the whole
/// queue skips such keys.
pub(super) fn read_look(
    spec: &Spec<'_, '_>,
    create_revision: i64,
    range: Option<&etcd::GetResponse>,
    size: Option<&etcd::GetResponse>,
    whole: bool,
) -> Option<Look> {
    let mut entries = Vec::new();
    let mut me = None;
    let of_two = !whole && spec.reads_neighbour();
    let mut kvs: Vec<&etcd::KeyValue> = range
        .map(etcd::GetResponse::kvs)
        .unwrap_or_default()
        .iter()
        .collect();
    if of_two {
        // Read newest first.
        kvs.reverse();
    }
    // The whole queue, for the other kinds: an entry behind ours that holds (a writer's
    // downgraded read) still blocks a writer ahead of it.
    for kv in kvs {
        let Some(owner) = owner_of(&spec.prefix, kv.key()) else {
            if of_two {
                return None;
            }
            continue;
        };
        if kv.key() == spec.key.as_bytes() {
            if kv.create_revision() != create_revision {
                return None;
            }
            me = Some(entries.len());
        }
        let (kind, holds) = parse_value(kv.value());
        entries.push(Entry {
            key: kv.key().to_vec(),
            rule: QueueEntry {
                kind,
                owner: Some(owner),
                holds,
            },
        });
    }
    let me = me?;
    if of_two && me + 1 != entries.len() {
        // Ours is not the newest of the two (it was put before, and others after it): what
        // is ahead of it was not read.
        return None;
    }
    let size = size
        .and_then(|get| get.kvs().first())
        .and_then(|kv| std::str::from_utf8(kv.value()).ok()?.parse().ok());
    Some(Look { entries, me, size })
}
