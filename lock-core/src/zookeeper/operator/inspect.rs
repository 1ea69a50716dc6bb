//! Reading one primitive's queue for the operator: its directory listed (with a semaphore's
//! size), then the data and stat of its nodes in multi-reads of [`READ_CHUNK`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zookeeper_client as zk;

use super::{family_of, MAX_WAITERS_LISTED};
use crate::backend::queue_rule::permits_held;
use crate::backend::{
    HolderLabel, HolderView, KeyInspection, LeaseKind, PermitUse, Primitive, WaiterView, Waiters,
};
use crate::zookeeper::kinds::{entry, Family};
use crate::zookeeper::node_data;
use crate::zookeeper::path::owner_of;
use crate::zookeeper::queue::admitted;
use crate::zookeeper::session::Session;
use crate::zookeeper::ZooKeeperBackend;
use crate::{FencingToken, OwnerToken, Result};

/// Nodes read per multi-read.
const READ_CHUNK: usize = 200;
/// The most nodes one inspection reads: every holder among them is shown, and the first
/// [`MAX_WAITERS_LISTED`] waiters.
const MAX_NODES_READ: usize = 2_000;

/// One node of a primitive's queue, as read.
pub(super) struct SeenNode {
    /// Its full path.
    pub(super) path: String,
    /// What it asks for.
    pub(super) kind: LeaseKind,
    /// Its owner token: from Curator's protection prefix, or (a node of another recipe) from
    /// the hex digits its name starts with, or its `czxid`.
    pub(super) owner: OwnerToken,
    /// Whether it holds.
    pub(super) holds: bool,
    /// Its stat when read.
    pub(super) stat: zk::Stat,
    /// The label its data carries.
    pub(super) label: Option<HolderLabel>,
}

/// One primitive's queue, as read.
pub(super) struct Seen {
    pub(super) primitive: Primitive,
    pub(super) full: String,
    /// Its directory.
    pub(super) dir: String,
    /// The nodes read, in queue order.
    pub(super) nodes: Vec<SeenNode>,
    /// A semaphore's size.
    pub(super) size: Option<u32>,
}

impl ZooKeeperBackend {
    /// Reads the queue of `primitive` named `full`: the directory's listing, then up to
    /// [`MAX_NODES_READ`] nodes' data and stat. Nodes gone between the two are left out.
    pub(super) async fn read_queue(
        &self,
        session: &Session,
        primitive: Primitive,
        full: &str,
    ) -> Result<Seen> {
        let family = family_of(primitive);
        let dir = self.primitive_dir(family, full);
        let listing = self.listing(session, family, &dir).await?;
        let by_rule = admitted(&listing.queue, listing.size.unwrap_or(0));
        let names = &listing.queue[..listing.queue.len().min(MAX_NODES_READ)];
        let mut nodes = Vec::with_capacity(names.len());
        for (chunk_index, chunk) in names.chunks(READ_CHUNK).enumerate() {
            let paths: Vec<String> = chunk.iter().map(|name| format!("{dir}/{name}")).collect();
            let results = self.read_data(session, &paths).await?;
            for (offset, (path, result)) in paths.into_iter().zip(results).enumerate() {
                let index = chunk_index * READ_CHUNK + offset;
                let zk::MultiReadResult::Data { data, stat } = result else {
                    continue; // gone since the listing
                };
                let name = &listing.queue[index];
                let Some(owner) = owner_named(name, stat.czxid) else {
                    continue;
                };
                let read = node_data::decode(&data);
                let holds = by_rule[index] || (family == Family::Semaphore && read.held);
                nodes.push(SeenNode {
                    path,
                    kind: kind_in(family, name),
                    owner,
                    holds,
                    stat,
                    label: read.label,
                });
            }
        }
        Ok(Seen {
            primitive,
            full: full.to_owned(),
            dir,
            nodes,
            size: listing.size,
        })
    }
}

impl Seen {
    /// The holders read, in queue order.
    pub(super) fn holders(&self) -> impl Iterator<Item = &SeenNode> {
        self.nodes.iter().filter(|node| node.holds)
    }

    /// What the operator is shown.
    pub(super) fn inspection(&self) -> KeyInspection {
        let now = SystemTime::now();
        let holders = self
            .holders()
            .map(|node| {
                let mut view = HolderView::new(node.kind, node.owner, token_of(&node.stat));
                view.label.clone_from(&node.label);
                view.acquired_at = Some(unix_ms(node.stat.mtime));
                view
            })
            .collect();
        let waiters = self
            .nodes
            .iter()
            .filter(|node| !node.holds)
            .take(MAX_WAITERS_LISTED)
            .map(|node| {
                let mut view = WaiterView::new(Some(node.kind));
                view.label.clone_from(&node.label);
                view.waiting_for = Some(
                    now.duration_since(unix_ms(node.stat.ctime))
                        .unwrap_or_default(),
                );
                view
            })
            .collect();
        let seen = KeyInspection::new(
            self.primitive,
            self.full.clone(),
            holders,
            Waiters::Listed(waiters),
        );
        if self.primitive != Primitive::Semaphore {
            return seen;
        }
        let in_use = permits_held(self.holders().map(|node| node.kind));
        seen.with_permits(PermitUse::new(self.size, in_use))
    }
}

/// A holder's fencing token: its node's `mzxid` (see `fence.rs`).
pub(super) fn token_of(stat: &zk::Stat) -> FencingToken {
    // A zxid is never negative; the fallback only keeps a corrupt reply from panicking.
    FencingToken::new(u64::try_from(stat.mzxid).unwrap_or_default())
}

/// A time the server gave in unix milliseconds.
pub(super) fn unix_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or_default())
}

/// What the node `name` in a directory of `family` asks for.
fn kind_in(family: Family, name: &str) -> LeaseKind {
    match family {
        Family::Lock => LeaseKind::Exclusive,
        Family::Fair => LeaseKind::Fair,
        Family::Leader => LeaseKind::Leader,
        Family::ReadWrite | Family::Semaphore => entry(name).kind,
    }
}

/// The owner token of the node `name`: Curator's protection prefix names ours (and Curator's);
/// a node of another recipe (kazoo's `<uuid hex>__lock__<sequence>`) is named by the 32 hex
/// digits it starts with, any other by its `czxid`, so that an operator can still name it.
/// (`None` is not reached: 32 hex digits always make a token.)
pub(super) fn owner_named(name: &str, czxid: i64) -> Option<OwnerToken> {
    let leading = name
        .get(..32)
        .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    owner_of(name)
        .or_else(|| leading.and_then(|hex| OwnerToken::from_hex(&hex.to_ascii_lowercase())))
        .or_else(|| OwnerToken::from_hex(&format!("{:032x}", czxid.unsigned_abs())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_has_an_owner() {
        let ours = "_c_01234567-89ab-cdef-0123-456789abcdef-lock-0000000001";
        let hex = |name: &str, czxid: i64| owner_named(name, czxid).unwrap().to_hex();
        assert_eq!(hex(ours, 7), "0123456789abcdef0123456789abcdef");
        let kazoo = "9F1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E__lock__0000000003";
        assert_eq!(hex(kazoo, 7), "9f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e");
        assert_eq!(hex("lock-0000000005", 0x1234), format!("{:032x}", 0x1234));
        assert_eq!(hex("é", 1), format!("{:032x}", 1));
    }
}
