//! The [`LockBackend`] side of [`ZooKeeperBackend`], and acquiring a lease of any kind: queue a
//! node in the primitive's directory, let `queue_rule::admit` say where it stands, and wait for
//! what the rule says to wait for. Renewal and release are in `held.rs`.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::fence::needs_fresh_token;
use super::held::Revocable;
use super::kinds::{downgrade_name, entry, node_name, Family};
use super::node_data;
use super::path::{owner_prefix, sequence};
use super::queue::{place_in, Ask, Node, Place, Queued};
use super::session::Session;
use super::{is_session_end, queue, ZooKeeperBackend, ZooKeeperLease, BACKEND};
use crate::backend::queue_rule::{admit, QueueEntry};
use crate::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, OptionalTraits,
};
use crate::breaker::Breaker;
use crate::{LockError, OwnerToken, Result};

impl ZooKeeperBackend {
    /// See [`LockBackend::acquire`].
    async fn acquire_lease(
        &self,
        request: AcquireRequest<'_>,
    ) -> Result<Option<Grant<ZooKeeperLease>>> {
        let family = Family::of(request.kind);
        let dir = self.primitive_dir(family, request.key.full());
        let mut session = self.session().await?;
        if let LeaseKind::Permits { limit, .. } = request.kind {
            // Refuse more permits than the semaphore has before queueing anything.
            let size = match self.ensure_size(&session, &dir, limit).await {
                Err(error) if is_session_end(&error) => {
                    session.retire();
                    session = self.session().await?;
                    self.ensure_size(&session, &dir, limit).await?
                }
                size => size?,
            };
            let alone = QueueEntry {
                kind: request.kind,
                owner: None,
                holds: false,
            };
            admit(&[alone], 0, size, None)?;
        }
        let mut prefix = node_name(request.owner, request.kind);
        // A candidate's node holds its participant id, as a Curator `LeaderLatch`'s does;
        // every other node its holder label (`node_data.rs`), in the create that queues it.
        let data = match family {
            Family::Leader => request.participant.unwrap_or_default().as_bytes().to_vec(),
            _ => node_data::encode(false, request.label),
        };
        let data = data.as_slice();
        let revocable = Revocable {
            audit_dir: self.audit_dir(request.key.full()),
            owner: request.owner,
        };
        let downgrade = match (request.kind, request.downgrade_from) {
            (LeaseKind::Read, Some(writer)) => {
                self.downgrade(&session, &dir, (request.owner, data), writer)
                    .await?
            }
            _ => None,
        };
        let mut queued = match downgrade {
            Some((beside, queued)) => {
                prefix = beside;
                queued
            }
            None => match self.enqueue(&session, &dir, &prefix, data).await {
                Ok(queued) => queued,
                Err(error) if is_session_end(&error) => {
                    // The session ended before its state watcher said so: one more try on a
                    // new one.
                    session.retire();
                    session = self.session().await?;
                    self.enqueue(&session, &dir, &prefix, data).await?
                }
                Err(error) => return Err(error),
            },
        };
        loop {
            let sent = Instant::now();
            let listing = self.listing(&session, family, &dir).await?;
            let size = match (request.kind, listing.size) {
                (LeaseKind::Permits { limit, .. }, None) => {
                    // The size node was deleted behind our back: set it again.
                    self.ensure_size(&session, &dir, limit).await?;
                    continue;
                }
                (_, size) => size.unwrap_or(0),
            };
            let ask = Ask {
                kind: request.kind,
                size,
                downgrade_from: request.downgrade_from,
            };
            let (place, earlier_own) =
                match place_in(&listing.queue, &queued.node.name, &prefix, ask) {
                    Ok(looked) => looked,
                    Err(refused) => {
                        // The semaphore shrank below this request's permits while it waited.
                        queued.remove().await;
                        return Err(refused);
                    }
                };
            if let Some(name) = earlier_own {
                // The same owner token queued before (a retried acquire): that node counts.
                if let Some(earlier) = self.node_at(&session, &dir, name).await {
                    let ours = std::mem::replace(&mut queued, Queued::adopt(&session, earlier));
                    ours.remove().await;
                    continue;
                }
            }
            match place {
                Place::Holds => {
                    // The fencing token (see `fence.rs`): a permit's `held` write, a fresh
                    // write after a forced release, else the node's creation.
                    let token = if family == Family::Semaphore {
                        let held = node_data::encode(true, request.label);
                        self.mark_held(&session, &queued.node, &held).await?
                    } else if needs_fresh_token(&listing, &queued.node) {
                        self.fresh_token(&session, &dir, &queued.node, data).await?
                    } else {
                        Some(queued.node.czxid)
                    };
                    let Some(token) = token else {
                        continue; // deleted meanwhile: the next look finds it gone
                    };
                    let node = queued.keep();
                    let grant = self.grant(session, node, token, request.ttl, sent, revocable);
                    return Ok(Some(grant));
                }
                Place::Gone => {
                    drop(queued);
                    if !session.is_usable() {
                        return Err(LockError::unavailable(
                            BACKEND,
                            "the ZooKeeper session ended while waiting for the lock",
                        ));
                    }
                    // Deleted behind our back while waiting: queue again, at the end (a
                    // downgraded read as a plain one: its writer may have gone meanwhile).
                    prefix = node_name(request.owner, request.kind);
                    queued = self.enqueue(&session, &dir, &prefix, data).await?;
                }
                Place::Behind(_) | Place::BehindAny => {
                    if request.deadline_passed() {
                        queued.remove().await;
                        return Ok(None);
                    }
                    match place {
                        Place::Behind(ahead) => {
                            let ours = queued.node.name.as_str();
                            self.wait_for(&session, &dir, (&ahead, ours), request.deadline)
                                .await?;
                        }
                        _ => {
                            let mut recheck_at =
                                Instant::now() + crate::jitter::jitter(self.shared.config.poll_cap);
                            if let Some(deadline) = request.deadline {
                                recheck_at = recheck_at.min(deadline);
                            }
                            self.wait_for_change(&session, &dir, &listing, recheck_at)
                                .await?;
                        }
                    }
                }
            }
        }
    }

    /// Queues a read beside the caller's own write node (owned by `writer`), if that still
    /// exists: the read's name and node. `None` when the writer's node is gone, so the read
    /// queues as any other.
    async fn downgrade(
        &self,
        session: &Arc<Session>,
        dir: &str,
        (owner, data): (OwnerToken, &[u8]),
        writer: OwnerToken,
    ) -> Result<Option<(String, Queued)>> {
        let writer_prefix = owner_prefix(writer);
        let write_node = self
            .children(session, dir)
            .await?
            .into_iter()
            .find(|c| c.starts_with(&writer_prefix) && entry(c).kind == LeaseKind::Write);
        let Some((write_node, sequence)) =
            write_node.and_then(|name| sequence(&name).map(|seq| (name, seq)))
        else {
            return Ok(None);
        };
        let beside = downgrade_name(owner, sequence);
        let queued = self
            .enqueue_beside(session, dir, (&beside, data), &write_node)
            .await?;
        Ok(queued.map(|queued| (beside, queued)))
    }

    /// The node `name` in `dir` with its czxid, if it still exists.
    async fn node_at(&self, session: &Arc<Session>, dir: &str, name: String) -> Option<Node> {
        let path = format!("{dir}/{name}");
        match self.retry(|| session.client.check_stat(&path)).await {
            Ok(Some(stat)) => Some(Node {
                path,
                name,
                czxid: stat.czxid,
            }),
            _ => None,
        }
    }
}

impl LockBackend for ZooKeeperBackend {
    type Lease = ZooKeeperLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities::full(BACKEND)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<ZooKeeperLease>>> {
        self.guarded(self.acquire_lease(request)).await
    }

    async fn renew(&self, lease: &ZooKeeperLease, ttl: Option<Duration>) -> Result<bool> {
        self.guarded(self.renew_lease(lease, ttl)).await
    }

    async fn release(&self, lease: &ZooKeeperLease) -> Result<bool> {
        self.guarded(self.release_lease(lease)).await
    }

    /// Deletes every node of the primitive's queue named with this owner's protection prefix
    /// (`_c_<owner uuid>-`). ZooKeeper runs one session's requests in the order they were sent,
    /// so the listing sees a node whose `create` was in flight when the acquire was dropped.
    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        let dir = self.primitive_dir(Family::of(abandoned.kind), abandoned.key.full());
        let prefix = owner_prefix(abandoned.owner);
        self.guarded(async {
            let session = self.session().await?;
            let mut found = false;
            for name in self.children(&session, &dir).await? {
                if name.starts_with(&prefix) {
                    queue::delete_quietly(&session, &format!("{dir}/{name}")).await;
                    found = true;
                }
            }
            Ok(found)
        })
        .await
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::all(self).with_operator(self)
    }
}
