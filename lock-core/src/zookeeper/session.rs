//! One ZooKeeper session and what rides on it: the loss signals of the leases it holds.
//!
//! Every lock node is ephemeral, so a lease is exactly as alive as its session. A task per
//! session follows the session's state and tells the holders:
//! - `Disconnected` (Curator's SUSPENDED): the session may expire without us hearing of it, and
//!   the client notices a silent connection only after 2/5 of the session timeout, so holders
//!   are told at once; that is before ZooKeeper can have expired the session and handed the lock
//!   to someone else. Their nodes stay until the session ends or the guard releases them.
//! - `Expired`, `Closed`, `AuthFailed`: the nodes are gone (or unreachable for good); holders are
//!   told at once and the backend opens a new session for later calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use zookeeper_client as zk;

use super::security::Prepared;
use super::{to_lock_error, BACKEND};
use crate::sync::lock;
use crate::{LockError, LossSignal, LostReason, Result};

/// How many times a session is tried in all, within the connect timeout, when SASL is on (see
/// [`Session::connect`]).
const SASL_CONNECT_ATTEMPTS: u32 = 3;

/// A connected session.
pub(super) struct Session {
    pub(super) client: zk::Client,
    held: Mutex<HashMap<u64, LossSignal>>,
    next_hold: AtomicU64,
    /// Set when a request found the session ended before its state watcher said so.
    retired: AtomicBool,
}

impl Session {
    /// Opens a session on `cluster` (a ZooKeeper connect string) with `security`'s TLS and SASL
    /// settings, within `connect_timeout`.
    pub(super) async fn connect(
        cluster: &str,
        security: &Prepared,
        session_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Arc<Self>> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        let mut attempts = 0;
        let client = loop {
            attempts += 1;
            let connecting = security
                .connector()
                .with_session_timeout(session_timeout)
                .with_connection_timeout(connect_timeout)
                .with_fail_eagerly()
                .connect(cluster);
            match tokio::time::timeout_at(deadline, connecting).await {
                Ok(Ok(client)) => break client,
                Ok(Err(zk::Error::BadArguments(why))) => {
                    return Err(LockError::InvalidConfig(format!(
                        "ZooKeeper connect string {cluster:?}: {why}"
                    )))
                }
                // Every server tried once and none opened a session: with SASL, zookeeper-client
                // sends its first SASL packet right behind the session request, and a server
                // (ZooKeeper 3.8's Netty connection) may answer the SASL packet first, which
                // the client takes for a malformed session reply ("unsupported server version
                // 1"). Another try opens the session.
                Ok(Err(error @ (zk::Error::NoHosts | zk::Error::ConnectionLoss)))
                    if security.sasl() && attempts < SASL_CONNECT_ATTEMPTS =>
                {
                    tracing::debug!(%error, attempts, "zookeeper session not opened; trying again");
                }
                Ok(Err(error)) => return Err(to_lock_error(error)),
                Err(_) => {
                    return Err(LockError::Timeout {
                        backend: BACKEND,
                        operation: "connect",
                        after: connect_timeout,
                    })
                }
            }
        };
        let session = Arc::new(Self {
            held: Mutex::new(HashMap::new()),
            next_hold: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            client,
        });
        tokio::spawn(follow_state(
            Arc::downgrade(&session),
            session.client.state_watcher(),
        ));
        Ok(session)
    }

    /// False once the session has ended for good (expired, closed, refused).
    pub(super) fn is_usable(&self) -> bool {
        !self.retired.load(Ordering::Relaxed) && !self.client.state().is_terminated()
    }

    /// Marks the session as ended: a request was answered "session expired" (the state
    /// watcher may still be reconnecting when a request learns it).
    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
    }

    /// Registers a held lease's loss signal; the returned id forgets it again.
    pub(super) fn hold(&self, loss: LossSignal) -> u64 {
        let id = self.next_hold.fetch_add(1, Ordering::Relaxed);
        lock(&self.held).insert(id, loss);
        id
    }

    /// Forgets a lease (released or lost).
    pub(super) fn forget(&self, id: u64) {
        lock(&self.held).remove(&id);
    }

    /// How many leases the session holds.
    pub(super) fn holding(&self) -> usize {
        lock(&self.held).len()
    }

    fn lose_all(&self, why: &str) {
        let held: Vec<LossSignal> = lock(&self.held).values().cloned().collect();
        if !held.is_empty() {
            tracing::warn!(
                session = ?self.client.session_id(),
                leases = held.len(),
                why,
                "zookeeper session trouble; holders told their locks may be lost"
            );
        }
        for loss in held {
            loss.fire(LostReason::SessionLost(why.to_owned()));
        }
    }
}

/// Follows the session's state until it ends or the session is dropped.
async fn follow_state(session: Weak<Session>, mut watcher: zk::StateWatcher) {
    loop {
        let state = watcher.changed().await;
        let Some(session) = session.upgrade() else {
            return;
        };
        match state {
            zk::SessionState::Disconnected => {
                session.lose_all("the connection to ZooKeeper was lost (session suspended)");
            }
            zk::SessionState::Expired => {
                session.lose_all("the ZooKeeper session expired");
                return;
            }
            zk::SessionState::Closed | zk::SessionState::AuthFailed => {
                session.lose_all("the ZooKeeper session was closed");
                return;
            }
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {}
        }
    }
}
