//! The backend's session: one etcd lease, kept alive in the background, under which every
//! queue entry of this backend waits. Waiting costs no lease grant and no keep-alive of its
//! own, and a process that dies takes its waiting entries with it when the session lease runs
//! out (the session TTL, not a lock's).

use std::sync::{Arc, Weak};
use std::time::Duration;

use etcd_client as etcd;
use tokio::sync::Mutex;
use tokio::time::{sleep, Instant};

use super::{lease_gone, EtcdBackend, Shared};
use crate::Result;

/// The session lease of one [`EtcdBackend`] (and its clones), granted on first use.
pub(super) struct Session {
    ttl: Duration,
    /// The live session lease; `None` before the first grant and after a loss.
    lease: Mutex<Option<i64>>,
    /// For revoking the lease when the backend goes.
    client: etcd::Client,
}

impl Session {
    /// A session whose lease will have `ttl` (whole seconds, at least 1).
    pub(super) fn new(client: etcd::Client, ttl: Duration) -> Self {
        Self {
            ttl,
            lease: Mutex::new(None),
            client,
        }
    }

    /// Whether a session lease is live (granted and not found lost).
    pub(super) async fn is_open(&self) -> bool {
        self.lease.lock().await.is_some()
    }

    /// The session lease's TTL.
    pub(super) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Forgets `lease_id` if it is the current session lease: etcd no longer has it (a put
    /// under it failed, or a keep-alive found it gone). The next [`EtcdBackend::session`]
    /// grants a new one.
    pub(super) async fn lost(&self, lease_id: i64) {
        let mut lease = self.lease.lock().await;
        if *lease == Some(lease_id) {
            tracing::debug!(
                lease_id,
                "etcd session lease gone; a new one is granted on next use"
            );
            *lease = None;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Nothing waits any more: free the entries at once instead of at the TTL.
        let Some(lease_id) = *self.lease.get_mut() else {
            return;
        };
        let mut client = self.client.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { client.lease_revoke(lease_id).await.ok() });
        }
    }
}

impl EtcdBackend {
    /// The session lease id, granting it (and starting its keep-alive task) when there is none.
    pub(super) async fn session(&self) -> Result<i64> {
        let session = &self.shared.session;
        let mut lease = session.lease.lock().await;
        if let Some(lease_id) = *lease {
            return Ok(lease_id);
        }
        let seconds = super::ttl_seconds(session.ttl);
        let granted = self
            .call("session", |mut c| async move {
                c.lease_grant(seconds, None).await
            })
            .await?;
        let lease_id = granted.id();
        let ttl = Duration::from_secs(granted.ttl().max(seconds).unsigned_abs());
        tokio::spawn(keep_session(Arc::downgrade(&self.shared), lease_id, ttl));
        *lease = Some(lease_id);
        Ok(lease_id)
    }
}

/// Keeps the session lease alive every third of its TTL on one keep-alive stream, until the
/// backend goes or the lease is lost (then forgets it, so the next use grants another).
async fn keep_session(shared: Weak<Shared>, lease_id: i64, ttl: Duration) {
    let mut stream: Option<(etcd::LeaseKeeper, etcd::LeaseKeepAliveStream)> = None;
    let mut alive_at = Instant::now();
    loop {
        sleep(ttl / 3).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let timeout = shared.config.response_timeout;
        let sent = Instant::now();
        let renewed = async {
            if stream.is_none() {
                stream = Some(shared.client.clone().lease_keep_alive(lease_id).await?);
                // Opening the stream sent one keep-alive already and read its answer.
                return Ok(true);
            }
            let Some((keeper, replies)) = stream.as_mut() else {
                return Ok(false);
            };
            keeper.keep_alive().await?;
            match replies.message().await? {
                Some(reply) => Ok(reply.ttl() > 0),
                None => Err(etcd::Error::WatchError("keep-alive stream ended".into())),
            }
        };
        match tokio::time::timeout(timeout, renewed).await {
            Ok(Ok(true)) => alive_at = sent,
            Ok(Ok(false)) => {
                shared.session.lost(lease_id).await;
                return;
            }
            Ok(Err(error)) if lease_gone(&error) => {
                shared.session.lost(lease_id).await;
                return;
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, lease_id, "etcd session keep-alive failed; retrying");
                stream = None;
            }
            Err(_) => stream = None,
        }
        if alive_at + ttl <= Instant::now() {
            // Whatever etcd thinks, nobody may rely on it any more.
            shared.session.lost(lease_id).await;
            return;
        }
    }
}
