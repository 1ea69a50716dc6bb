//! The waiting line of one primitive: our node in it, where it stands (by
//! `queue_rule::admit`), and waiting for the node it waits for.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};
use zookeeper_client as zk;

use super::kinds::{beside_of, entry, Family};
use super::path::{sequence, sort_queue, stem};
use super::session::Session;
use super::{to_lock_error, ZooKeeperBackend};
use crate::backend::queue_rule::{admit, Admission, QueueEntry};
use crate::backend::{LeaseKind, QueueBackend};
use crate::{LockKey, OwnerToken, Result};

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
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// It holds what it asked for.
    Holds,
    /// Behind others; looks again once this node (the one the rule says to watch) is gone.
    Behind(String),
    /// Behind others; looks again once any node ahead is gone or the semaphore grows.
    BehindAny,
    /// The node is not in the queue any more (deleted behind our back, or its session ended).
    Gone,
}

/// What a waiter asks for, as the grant rule needs it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ask {
    /// The lease kind of our node.
    pub(super) kind: LeaseKind,
    /// The semaphore's size (ignored by the other kinds).
    pub(super) size: u32,
    /// The caller's own write lease, which does not block its read.
    pub(super) downgrade_from: Option<OwnerToken>,
}

/// Where our node `me` stands in `queue` (sorted), and (for a retry by the same owner) an
/// older node of ours, named with the same `prefix`, found ahead of it. An error when the rule
/// refuses the request outright (more permits than the semaphore has).
pub(super) fn place_in(
    queue: &[String],
    me: &str,
    prefix: &str,
    ask: Ask,
) -> Result<(Place, Option<String>)> {
    let earlier_own = queue
        .iter()
        .take_while(|c| **c != me)
        .find(|c| c.starts_with(prefix))
        .cloned();
    let Some(index) = queue.iter().position(|c| c == me) else {
        return Ok((Place::Gone, earlier_own));
    };
    let mut entries = entries(queue);
    // Our own node asks for what the request asks (a fair lock's node reads as the lock's).
    entries[index].kind = ask.kind;
    let place = match admit(&entries, index, ask.size, ask.downgrade_from)? {
        Admission::Granted => Place::Holds,
        Admission::WaitFor(ahead) => queue
            .get(ahead)
            .map_or(Place::BehindAny, |name| Place::Behind(name.clone())),
        Admission::WaitForAnyAhead => Place::BehindAny,
    };
    Ok((place, earlier_own))
}

/// The queue entries of the children in `queue` (sorted).
pub(super) fn entries(queue: &[String]) -> Vec<QueueEntry> {
    queue.iter().map(|name| entry(name)).collect()
}

/// For each entry of `queue` (sorted), whether the grant rule admits it now, with the
/// semaphore's `size` (ignored by other primitives). A downgraded read counts as beside its
/// writer, as it was granted.
pub(super) fn admitted(queue: &[String], size: u32) -> Vec<bool> {
    let entries = entries(queue);
    (0..entries.len())
        .map(|index| {
            let downgrade_from = stem(&queue[index])
                .and_then(beside_of)
                .and_then(|writer| queue.iter().position(|c| sequence(c) == Some(writer)))
                .and_then(|writer| entries[writer].owner);
            matches!(
                admit(&entries, index, size, downgrade_from),
                Ok(Admission::Granted)
            )
        })
        .collect()
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

/// One look at a primitive's directory.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Listing {
    /// Its queue, in queue order.
    pub(super) queue: Vec<String>,
    /// The semaphore's size, read in the same snapshot (`None`: none set, or no semaphore).
    pub(super) size: Option<u32>,
    /// The directory's `mzxid`, read in the same reply (`None` for a semaphore, whose
    /// grants take a fresh token anyway, and for a directory that does not exist): the zxid
    /// of the last forced release there or later (see `fence.rs`).
    pub(super) dir_mzxid: Option<i64>,
}

impl ZooKeeperBackend {
    /// The queue (and for a semaphore its size) of the primitive at `dir`; empty when the
    /// directory does not exist.
    pub(super) async fn listing(
        &self,
        session: &Session,
        family: Family,
        dir: &str,
    ) -> Result<Listing> {
        if family == Family::Semaphore {
            return self.semaphore_listing(session, dir).await;
        }
        let (mut queue, stat) = match self.retry(|| session.client.get_children(dir)).await {
            Ok((children, stat)) => (children, Some(stat)),
            Err(zk::Error::NoNode) => (Vec::new(), None),
            Err(error) => return Err(to_lock_error(error)),
        };
        sort_queue(&mut queue);
        Ok(Listing {
            queue,
            size: None,
            dir_mzxid: stat.map(|stat| stat.mzxid),
        })
    }

    /// Creates our `EPHEMERAL_SEQUENTIAL` node named `prefix` (plus the sequence), holding
    /// `data`, in the queue at `dir` (creating the primitive's container node when missing). A
    /// create whose reply was lost looks for its node by the owner's uuid before trying again,
    /// so no orphan is left behind.
    pub(super) async fn enqueue(
        &self,
        session: &Arc<Session>,
        dir: &str,
        prefix: &str,
        data: &[u8],
    ) -> Result<Queued> {
        let path = format!("{dir}/{prefix}");
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let mut failures = 0;
        loop {
            let error = match session.client.create(&path, data, &options).await {
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
                    if let Some(node) = self.find_own(session, dir, prefix).await? {
                        return Ok(self.queued(session, node));
                    }
                }
                error => return Err(to_lock_error(error)),
            }
        }
    }

    /// Creates our node named `prefix`, holding `data`, in `dir` in one transaction with a
    /// check that `writer` (a node in `dir`) exists: a downgraded read, which must never land
    /// without its writer. `None`, with nothing created, when the writer is gone.
    pub(super) async fn enqueue_beside(
        &self,
        session: &Arc<Session>,
        dir: &str,
        (prefix, data): (&str, &[u8]),
        writer: &str,
    ) -> Result<Option<Queued>> {
        let (path, writer) = (format!("{dir}/{prefix}"), format!("{dir}/{writer}"));
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let mut failures = 0;
        loop {
            let mut transaction = session.client.new_multi_writer();
            transaction
                .add_check_version(&writer, -1)
                .and_then(|()| transaction.add_create(&path, data, &options))
                .map_err(to_lock_error)?;
            let error = match transaction.commit().await {
                Ok(_) => {
                    // The reply's stat may be invalid (ZOOKEEPER-4026): read the node back.
                    return self
                        .find_own(session, dir, prefix)
                        .await
                        .map(|node| node.map(|node| self.queued(session, node)));
                }
                Err(zk::MultiWriteError::OperationFailed {
                    index: 0,
                    source: zk::Error::NoNode,
                }) => return Ok(None),
                Err(error) => zk::Error::from(error),
            };
            self.write_failed(&mut failures, error).await?;
            if let Some(node) = self.find_own(session, dir, prefix).await? {
                return Ok(Some(self.queued(session, node)));
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

    /// Waits until `ahead` (a node in `dir`) is deleted, `deadline` passes, or the session
    /// reports something; the caller then looks at the queue again. Should a watch event be
    /// lost, the waiter checks that node and its own again every [`poll_cap`] (jittered): two
    /// `exists`, whatever the queue's length. Listing the whole queue on that timer instead made a crowd
    /// of waiters cost the server O(waiters²) (1,000 waiters: 367 requests per handoff and
    /// lock timeouts, `cargo xtask chaos --scenario 10`).
    ///
    /// [`poll_cap`]: super::ZooKeeperBackendBuilder::poll_cap
    pub(super) async fn wait_for(
        &self,
        session: &Session,
        dir: &str,
        (ahead, ours): (&str, &str),
        deadline: Option<Instant>,
    ) -> Result<()> {
        let path = format!("{dir}/{ahead}");
        let mut first = true;
        loop {
            // After the first wait: ours may have been deleted behind our back (the caller's
            // look then finds it gone and queues again).
            if !std::mem::take(&mut first) {
                let own = format!("{dir}/{ours}");
                let stat = self
                    .retry(|| session.client.check_stat(&own))
                    .await
                    .map_err(to_lock_error)?;
                if stat.is_none() {
                    return Ok(());
                }
            }
            let (stat, watcher) = self
                .retry(|| session.client.check_and_watch_stat(&path))
                .await
                .map_err(to_lock_error)?;
            if stat.is_none() {
                return Ok(());
            }
            let recheck_at = Instant::now() + crate::jitter::jitter(self.shared.config.poll_cap);
            let wake = deadline.map_or(recheck_at, |deadline| deadline.min(recheck_at));
            tokio::select! {
                // The node's deletion, or the session breaking.
                _ = watcher.changed() => return Ok(()),
                () = sleep_until(wake) => {}
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) || !session.is_usable() {
                return Ok(());
            }
        }
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

impl QueueBackend for ZooKeeperBackend {
    /// The nodes of the primitive's queue that the grant rule does not admit now (for a
    /// semaphore: behind the holders).
    async fn queue_length(&self, key: &LockKey, kind: LeaseKind) -> Result<usize> {
        let family = Family::of(kind);
        let dir = self.primitive_dir(family, key.full());
        self.guarded(async {
            let session = self.session().await?;
            let listing = self.listing(&session, family, &dir).await?;
            let holding = if family == Family::Semaphore {
                self.holding(&session, &dir, &listing).await?
            } else {
                admitted(&listing.queue, 0)
            };
            Ok(holding.into_iter().filter(|holds| !holds).count())
        })
        .await
    }
}
