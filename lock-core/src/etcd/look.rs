//! The queue as one acquisition reads it: all its entries, in create-revision order, and what [`queue_rule::admit`](crate::backend::queue_rule::admit) makes of them.

use etcd_client as etcd;

use super::keys::{entry_key, entry_value, owner_of, parse_value, size_key};
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
    pub(super) waiting: String,
    pub(super) holding: String,
}

impl<'r, 'k> Spec<'r, 'k> {
    /// The entry key and values of `request` in the queue `prefix`.
    pub(super) fn new(request: &'r AcquireRequest<'k>, prefix: String) -> Self {
        let (owner, kind) = (request.owner, request.kind);
        Self {
            key: entry_key(&prefix, owner),
            waiting: entry_value(owner, kind, false),
            holding: entry_value(owner, kind, true),
            prefix,
            request,
        }
    }

    /// Whether the request is for permits.
    pub(super) fn is_semaphore(&self) -> bool {
        matches!(self.request.kind, LeaseKind::Permits { .. })
    }

    /// The range read of the whole queue, by create revision.
    pub(super) fn range(&self) -> etcd::TxnOp {
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
    /// Reads our entry, the queue ahead of it and (for a semaphore) the size: `None` when our
    /// entry is gone.
    pub(super) async fn look(&self, spec: &Spec<'_, '_>, queued: &Queued) -> Result<Option<Look>> {
        let own = queued.key.clone();
        let range = spec.range();
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
        Ok(read_look(
            spec,
            queued.create_revision,
            gets.get(1),
            gets.get(2),
        ))
    }
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

/// The queue from a range read (and the size from its read): `None` when our
/// entry is not in it.
pub(super) fn read_look(
    spec: &Spec<'_, '_>,
    create_revision: i64,
    range: Option<&etcd::GetResponse>,
    size: Option<&etcd::GetResponse>,
) -> Option<Look> {
    let mut entries = Vec::new();
    let mut me = None;
    // The whole queue: an entry behind ours that holds (a writer's downgraded read) still
    // blocks a writer ahead of it.
    for kv in range.map(etcd::GetResponse::kvs).unwrap_or_default() {
        let Some(owner) = owner_of(&spec.prefix, kv.key()) else {
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
    let size = size
        .and_then(|get| get.kvs().first())
        .and_then(|kv| std::str::from_utf8(kv.value()).ok()?.parse().ok());
    Some(Look {
        entries,
        me: me?,
        size,
    })
}
