//! A granted lease: its TTL timer, the watch on its own node, renewal and release.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use super::queue::{self, backoff, is_transient, Node};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend, ZooKeeperLease};
use crate::backend::expiry::Expiry;
use crate::backend::Grant;
use crate::{FencingToken, LossSignal, LostReason, OwnerToken, Result};

/// Where a forced release of a lease would leave its record: what the watch on the holder's
/// node reads when the node is deleted, to tell a revocation from any other loss.
pub(super) struct Revocable {
    /// The audit directory of the lease's key (`operator/audit.rs`).
    pub(super) audit_dir: String,
    /// The lease's owner token.
    pub(super) owner: OwnerToken,
}

/// The longest the watch on a deleted node waits for the audit record before it reports the
/// loss without it.
const REVOCATION_READ: Duration = Duration::from_secs(2);

impl ZooKeeperBackend {
    /// Turns our node, now first in line, into a granted lease with the fencing token `token`
    /// (see `fence.rs`): starts its TTL timer and the watch on the node itself.
    pub(super) fn grant(
        &self,
        session: Arc<Session>,
        node: Node,
        token: i64,
        ttl: Duration,
        sent: Instant,
        revocable: Revocable,
    ) -> Grant<ZooKeeperLease> {
        let loss = LossSignal::new();
        let expiry = Arc::new(Expiry::new(sent + ttl));
        let hold = session.hold(loss.clone());
        tokio::spawn({
            let (session, path, expiry, loss) = (
                session.clone(),
                node.path.clone(),
                expiry.clone(),
                loss.clone(),
            );
            async move {
                if expiry.run_out().await {
                    session.forget(hold);
                    loss.fire(LostReason::Expired);
                    queue::delete_quietly(&session, &path).await;
                }
            }
        });
        tokio::spawn(watch_own_node(
            session.clone(),
            (node.path.clone(), revocable),
            expiry.clone(),
            loss.clone(),
            hold,
        ));
        // A zxid is never negative; the fallback only keeps a corrupt reply from panicking.
        let fence = FencingToken::new(u64::try_from(token).unwrap_or_default());
        let lease = ZooKeeperLease {
            session,
            node,
            expiry,
            hold,
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }

    /// See [`LockBackend::renew`](crate::backend::LockBackend::renew): the node must still be
    /// ours (same czxid); the TTL timer moves.
    pub(super) async fn renew_lease(
        &self,
        lease: &ZooKeeperLease,
        ttl: Option<Duration>,
    ) -> Result<bool> {
        if lease.expiry.is_ended() || !lease.session.is_usable() {
            return Ok(false);
        }
        let sent = Instant::now();
        let stat = self
            .retry(|| lease.session.client.check_stat(&lease.node.path))
            .await;
        match stat {
            Ok(Some(stat)) if stat.czxid == lease.node.czxid => {}
            Ok(_) | Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => {
                if lease.expiry.end() {
                    lease.session.forget(lease.hold);
                }
                return Ok(false);
            }
            Err(error) => return Err(to_lock_error(error)),
        }
        Ok(match ttl {
            Some(ttl) => lease.expiry.extend(sent + ttl),
            None => !lease.expiry.is_ended(),
        })
    }

    /// See [`LockBackend::release`](crate::backend::LockBackend::release): deletes the node.
    pub(super) async fn release_lease(&self, lease: &ZooKeeperLease) -> Result<bool> {
        lease.session.forget(lease.hold);
        // Stop the TTL timer, but delete whether or not the lease had ended already: a release
        // cut short after ending it (its future dropped) is sent again, and must still delete.
        // The node's path holds its unique sequence, so it can only be ours.
        lease.expiry.end();
        let mut failures = 0;
        loop {
            match lease.session.client.delete(&lease.node.path, None).await {
                Ok(()) => return Ok(true),
                // After a lost reply the first delete may have gone through: the node was ours.
                Err(zk::Error::NoNode) => return Ok(failures > 0),
                Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(false),
                Err(error)
                    if is_transient(&error) && failures + 1 < self.shared.config.attempts =>
                {
                    failures += 1;
                    tokio::time::sleep(backoff(failures)).await;
                }
                Err(error) => return Err(to_lock_error(error)),
            }
        }
    }
}

/// Fires the holder's loss signal when its node is deleted behind its back (or its session
/// ends); returns when the lease ends in any way. A deleted node is looked up in the key's
/// audit records first: a forced release, which writes its record in the transaction that
/// deletes the node, is reported as [`LostReason::Revoked`] by this push, within a round trip.
async fn watch_own_node(
    session: Arc<Session>,
    (path, revocable): (String, Revocable),
    expiry: Arc<Expiry>,
    loss: LossSignal,
    hold: u64,
) {
    loop {
        let (stat, watcher) = match session.client.check_and_watch_stat(&path).await {
            Ok(watched) => watched,
            Err(error) => {
                // Renewals still check the node; this only loses the early warning.
                tracing::debug!(%path, %error, "cannot watch the held zookeeper node");
                return;
            }
        };
        let (gone, deleted) = match stat {
            None => (true, true),
            Some(_) => {
                let event = tokio::select! {
                    event = watcher.changed() => event,
                    () = expiry.ended() => return,
                };
                match event.event_type {
                    zk::EventType::NodeDeleted => (true, true),
                    zk::EventType::Session if event.session_state.is_terminated() => (true, false),
                    _ => (false, false),
                }
            }
        };
        if gone {
            let reason = if deleted && !expiry.is_ended() {
                revoked_or_not(&session, &revocable).await
            } else {
                LostReason::NotOwner
            };
            if expiry.end() {
                session.forget(hold);
                loss.fire(reason);
            }
            return;
        }
        if expiry.is_ended() {
            return;
        }
    }
}

/// Why a holder's node was deleted: [`LostReason::Revoked`] when the key's audit records hold
/// a forced release of its owner, else [`LostReason::NotOwner`] (also when they cannot be read
/// within [`REVOCATION_READ`]).
async fn revoked_or_not(session: &Session, revocable: &Revocable) -> LostReason {
    let read =
        super::operator::find_revocation(&session.client, &revocable.audit_dir, revocable.owner);
    match tokio::time::timeout(REVOCATION_READ, read).await {
        Ok(Ok(Some(record))) => LostReason::Revoked {
            operator: record.operator,
            reason: record.reason,
        },
        _ => LostReason::NotOwner,
    }
}
