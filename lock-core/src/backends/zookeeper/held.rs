//! A granted lease: its TTL timer and the watch on its own node.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use super::queue::{self, Node};
use super::session::Session;
use super::{ZooKeeperBackend, ZooKeeperLease};
use crate::backend::Grant;
use crate::backends::expiry::Expiry;
use crate::{FencingToken, LossSignal, LostReason};

impl ZooKeeperBackend {
    /// Turns our node, now first in line, into a granted lease: starts its TTL timer and the
    /// watch on the node itself.
    pub(super) fn grant(
        &self,
        session: Arc<Session>,
        node: Node,
        ttl: Duration,
        sent: Instant,
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
            node.path.clone(),
            expiry.clone(),
            loss.clone(),
            hold,
        ));
        // A czxid is never negative; the fallback only keeps a corrupt reply from panicking.
        let fence = FencingToken::new(u64::try_from(node.czxid).unwrap_or_default());
        let lease = ZooKeeperLease {
            session,
            node,
            expiry,
            hold,
        };
        Grant::new(lease, fence, sent).with_loss(loss)
    }
}

/// Fires the holder's loss signal when its node is deleted behind its back (or its session
/// ends); returns when the lease ends in any way.
async fn watch_own_node(
    session: Arc<Session>,
    path: String,
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
        let gone = match stat {
            None => true,
            Some(_) => {
                let event = tokio::select! {
                    event = watcher.changed() => event,
                    () = expiry.ended() => return,
                };
                match event.event_type {
                    zk::EventType::NodeDeleted => true,
                    zk::EventType::Session if event.session_state.is_terminated() => true,
                    _ => false,
                }
            }
        };
        if gone {
            if expiry.end() {
                session.forget(hold);
                loss.fire(LostReason::NotOwner);
            }
            return;
        }
        if expiry.is_ended() {
            return;
        }
    }
}
