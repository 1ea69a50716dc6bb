//! The waiting line of one lock: our node in it, where it stands, and waiting for the node
//! just ahead of it.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};
use zookeeper_client as zk;

use super::path::{node_prefix, sort_queue, PERMITS};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend};
use crate::{OwnerToken, Result};

/// A node this backend created in a lock's queue.
#[derive(Clone, Debug)]
pub(super) struct Node {
    /// Its full path.
    pub(super) path: String,
    /// Its name (the last path component).
    pub(super) name: String,
    /// The zxid that created it: the fencing token if it comes to hold the lock.
    pub(super) czxid: i64,
}

/// Where a node stands in its queue.
pub(super) enum Place {
    /// Among the first [`PERMITS`]: it holds the lock.
    Holds,
    /// Behind others; holds once this node (the one [`PERMITS`] places ahead) is gone.
    Behind(String),
    /// The node is not in the queue any more (deleted behind our back, or its session ended).
    Gone,
}

/// Our node while it waits: dropping this (a cancelled or failed acquire) deletes the node in
/// a spawned task, so the waiter behind us is not held up by an orphan.
pub(super) struct Queued {
    pub(super) session: Arc<Session>,
    pub(super) node: Node,
    armed: bool,
}

impl Queued {
    /// A node an earlier acquisition with the same owner token created: used, but never
    /// deleted by this acquisition.
    pub(super) fn adopt(session: &Arc<Session>, node: Node) -> Self {
        Self {
            session: session.clone(),
            node,
            armed: false,
        }
    }

    /// The node now belongs to a lease: keep it.
    pub(super) fn keep(mut self) -> Node {
        self.armed = false;
        self.node.clone()
    }

    /// Deletes the node and waits for the answer (a try that failed: the next try of the same
    /// client must not find its own stale node ahead of it).
    pub(super) async fn remove(mut self) {
        if std::mem::replace(&mut self.armed, false) {
            delete_quietly(&self.session, &self.node.path).await;
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (session, path) = (self.session.clone(), std::mem::take(&mut self.node.path));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { delete_quietly(&session, &path).await });
        }
    }
}

/// Deletes `path`; a node that is already gone is fine, other failures are logged (the
/// session's end removes the node anyway).
pub(super) async fn delete_quietly(session: &Session, path: &str) {
    match session.client.delete(path, None).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(error) => {
            tracing::debug!(path, %error, "deleting a zookeeper queue node failed; the session's end removes it")
        }
    }
}

impl ZooKeeperBackend {
    /// Creates our `EPHEMERAL_SEQUENTIAL` node in the queue at `dir` (creating the lock's
    /// container node when missing). A create whose reply was lost looks for its node by the
    /// owner's uuid before trying again, so no orphan is left behind.
    pub(super) async fn enqueue(
        &self,
        session: &Arc<Session>,
        dir: &str,
        owner: OwnerToken,
    ) -> Result<Queued> {
        let prefix = node_prefix(owner);
        let path = format!("{dir}/{prefix}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let mut failures = 0;
        loop {
            let error = match session.client.create(&path, &[], &options).await {
                Ok((stat, sequence)) => {
                    let node = Node {
                        path: format!("{path}{sequence}"),
                        name: format!("{prefix}{sequence}"),
                        czxid: stat.czxid,
                    };
                    return Ok(self.queued(session, node));
                }
                Err(error) => error,
            };
            failures += 1;
            if failures >= self.shared.config.attempts.max(3) {
                return Err(to_lock_error(error));
            }
            match error {
                // The lock (or the root) does not exist yet, or its empty container was just
                // reaped: create the path as containers, which ZooKeeper removes once empty.
                zk::Error::NoNode => {
                    let containers = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
                    match session.client.mkdir(dir, &containers).await {
                        Ok(()) | Err(zk::Error::NodeExists) => {}
                        Err(error) => return Err(to_lock_error(error)),
                    }
                }
                error if is_transient(&error) => {
                    tokio::time::sleep(backoff(failures)).await;
                    if let Some(node) = self.find_own(session, dir, &prefix).await? {
                        return Ok(self.queued(session, node));
                    }
                }
                error => return Err(to_lock_error(error)),
            }
        }
    }

    fn queued(&self, session: &Arc<Session>, node: Node) -> Queued {
        Queued {
            session: session.clone(),
            node,
            armed: true,
        }
    }

    /// Our node in `dir` whose name starts with `prefix`, if the create went through.
    async fn find_own(&self, session: &Session, dir: &str, prefix: &str) -> Result<Option<Node>> {
        let children = self.children(session, dir).await?;
        let Some(name) = children.into_iter().find(|c| c.starts_with(prefix)) else {
            return Ok(None);
        };
        let path = format!("{dir}/{name}");
        let stat = self
            .retry(|| session.client.check_stat(&path))
            .await
            .map_err(to_lock_error)?;
        Ok(stat.map(|stat| Node {
            path,
            name,
            czxid: stat.czxid,
        }))
    }

    /// The children of `dir`; none when the lock node does not exist.
    pub(super) async fn children(&self, session: &Session, dir: &str) -> Result<Vec<String>> {
        match self.retry(|| session.client.list_children(dir)).await {
            Ok(children) => Ok(children),
            Err(zk::Error::NoNode) => Ok(Vec::new()),
            Err(error) => Err(to_lock_error(error)),
        }
    }

    /// Where `node` stands in the queue at `dir`, and (for a retry by the same owner) an older
    /// node of ours found ahead of it.
    pub(super) async fn place(
        &self,
        session: &Session,
        dir: &str,
        node: &Node,
        prefix: &str,
    ) -> Result<(Place, Option<String>)> {
        let mut children = self.children(session, dir).await?;
        sort_queue(&mut children);
        let earlier_own = children
            .iter()
            .take_while(|c| **c != node.name)
            .find(|c| c.starts_with(prefix))
            .cloned();
        let place = match children.iter().position(|c| *c == node.name) {
            None => Place::Gone,
            Some(index) if index < PERMITS => Place::Holds,
            Some(index) => Place::Behind(children[index - PERMITS].clone()),
        };
        Ok((place, earlier_own))
    }

    /// Waits until `ahead` (a node in `dir`) is deleted, `recheck_at` passes, or the session
    /// reports something; the caller then looks at the queue again.
    pub(super) async fn wait_for(
        &self,
        session: &Session,
        dir: &str,
        ahead: &str,
        recheck_at: Instant,
    ) -> Result<()> {
        let path = format!("{dir}/{ahead}");
        let (stat, watcher) = self
            .retry(|| session.client.check_and_watch_stat(&path))
            .await
            .map_err(to_lock_error)?;
        if stat.is_none() {
            return Ok(());
        }
        tokio::select! {
            _ = watcher.changed() => {}
            () = sleep_until(recheck_at) => {}
        }
        Ok(())
    }
}

/// Errors after which the same request may be sent again. `Custom` is what the client hands
/// requests in flight when their connection broke (no reply in time, I/O errors).
pub(super) fn is_transient(error: &zk::Error) -> bool {
    matches!(
        error,
        zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::Custom(_)
    )
}

/// The pause before the `failures`-th retry.
pub(super) fn backoff(failures: u32) -> Duration {
    Duration::from_millis(20) * failures.min(10)
}
