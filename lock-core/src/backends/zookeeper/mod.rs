//! The ZooKeeper backend (feature `zookeeper`): Curator's lock recipe, an ephemeral sequential
//! node per acquisition, the lowest one holds, each waiter watches only the node just ahead.
//!
//! ```no_run
//! use lock_core::{LockClient, ZooKeeperBackend};
//!
//! # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
//! let backend = ZooKeeperBackend::connect("127.0.0.1:2181").await?;
//! let locks = LockClient::builder(backend).namespace("shop").build()?;
//! let guard = locks.lock("sku:42").await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Layout in ZooKeeper
//! The lock `shop:sku:42` with the default root `/locks` is the container node
//! `/locks/shop:sku:42` (`/`, `%` and characters ZooKeeper refuses are percent-encoded; see
//! [`ZooKeeperBackend::lock_path`]). Each acquisition creates the `EPHEMERAL_SEQUENTIAL` child
//! `_c_<uuid>-lock-<sequence>`, the name Curator's `InterProcessMutex` uses. The queue is
//! ordered by the sequence ZooKeeper appends to every sequential child, whoever created it
//! (Curator's order for Curator's nodes): a Java service locking the same path with Curator and
//! this backend exclude each other, and ours also waits for other clients of ZooKeeper's lock
//! recipe, such as python kazoo's `Lock` (which waits for ours when given
//! `extra_lock_patterns=["-lock-"]`). A child without a sequence is waited for, never skipped.
//! The node with the lowest sequence holds the lock; every other node watches only the node
//! just ahead of it, so a release wakes exactly one waiter. A create whose reply was lost finds
//! its node again by the uuid (Curator's protected mode) instead of leaving an orphan; a
//! cancelled or timed-out waiter deletes its node.
//!
//! # Fencing
//! The fencing token is the holder node's `czxid`: ZooKeeper's transaction id, which increases
//! across the whole ensemble, so it keeps increasing even when the lock's container node was
//! reaped and re-created (the sequence number would restart).
//!
//! # Leases and sessions
//! Lock nodes live as long as the backend's session, which the client keeps alive by itself.
//! - **Session suspended** (connection lost): `lost()` fires at once with
//!   [`LostReason::SessionLost`](crate::LostReason::SessionLost), which is before ZooKeeper can
//!   have expired the session (the client notices a dead connection after 2/5 of the session
//!   timeout); this is Curator's default policy. **Session expired or closed**: `lost()` fires at
//!   once, the nodes are gone, and the backend opens a new session for later calls.
//! - **TTL**: ephemeral nodes have no TTL of their own, so the holder's process keeps it: a lease
//!   not renewed within its TTL (a stuck task, an abandoned guard, a fixed lease held too long)
//!   has its node deleted when the TTL ends. A holder whose *process* dies is freed when its
//!   session expires, i.e. after the session timeout (default 10 s; the server bounds it to
//!   2–20 ticks), not after the lease TTL.
//! - A node deleted behind the holder's back fires `lost()` at once (the holder watches its own
//!   node), and renewals check the node too.
//!
//! # Round trips
//! An uncontended acquire is a create and a children listing (plus a create of the lock node
//! the first time); a release is one delete. A waiter adds a listing and an `exists` watch per
//! wake-up. Waiters also look again on a capped, jittered timer ([`poll_cap`]), should a watch
//! event be lost.
//!
//! [`poll_cap`]: ZooKeeperBackendBuilder::poll_cap

mod held;
mod path;
mod queue;
mod session;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use self::path::node_prefix;
use self::queue::{backoff, is_transient, Node, Place};
use self::session::Session;
use crate::backend::{AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend};
use crate::backends::expiry::Expiry;
use crate::lock::held::lock;
use crate::{LockError, LockKey, OwnerToken, Result};

const BACKEND: &str = "zookeeper";

/// Locks in a ZooKeeper ensemble, compatible with Curator's `InterProcessMutex`.
///
/// Cheap to clone: clones share one session.
#[derive(Clone)]
pub struct ZooKeeperBackend {
    shared: Arc<Shared>,
}

struct Shared {
    cluster: String,
    root: String,
    config: ZkConfig,
    session: Mutex<Arc<Session>>,
    /// Held while a new session is opened, so concurrent callers open only one.
    reconnecting: tokio::sync::Mutex<()>,
}

#[derive(Clone, Copy, Debug)]
struct ZkConfig {
    session_timeout: Duration,
    connect_timeout: Duration,
    poll_cap: Duration,
    attempts: u32,
}

/// A lease held in ZooKeeper: our node in the lock's queue, on one session.
pub struct ZooKeeperLease {
    session: Arc<Session>,
    node: Node,
    expiry: Arc<Expiry>,
    hold: u64,
}

impl std::fmt::Debug for ZooKeeperLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZooKeeperLease")
            .field("path", &self.node.path)
            .field("czxid", &self.node.czxid)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`ZooKeeperBackend`]; start from [`ZooKeeperBackend::builder`].
#[derive(Clone, Debug)]
#[must_use]
pub struct ZooKeeperBackendBuilder {
    cluster: String,
    root: String,
    config: ZkConfig,
}

impl ZooKeeperBackendBuilder {
    /// The node every lock node is created under (default `/locks`). Give a Curator user the
    /// same root and key to share locks with it.
    pub fn root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// The session timeout to ask for (default 10 s; the server bounds it, by default to
    /// 2–20 × its `tickTime`). A holder whose process dies frees its locks after this.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.config.session_timeout = timeout;
        self
    }

    /// How long opening a session may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout = timeout;
        self
    }

    /// The longest a waiter goes without looking at the queue again, in case a watch event is
    /// lost (default 1 s).
    pub fn poll_cap(mut self, cap: Duration) -> Self {
        self.config.poll_cap = cap;
        self
    }

    /// How many times a request whose connection was lost is sent again (default 3 in all).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.config.attempts = attempts;
        self
    }

    /// Checks the settings and opens the session.
    pub async fn connect(self) -> Result<ZooKeeperBackend> {
        path::validate_root(&self.root)?;
        let config = self.config;
        if config.attempts == 0 || config.connect_timeout.is_zero() || config.poll_cap.is_zero() {
            return Err(LockError::InvalidConfig(
                "ZooKeeper attempts, connect timeout and poll cap must be positive".into(),
            ));
        }
        let session = Session::connect(
            &self.cluster,
            config.session_timeout,
            config.connect_timeout,
        )
        .await?;
        Ok(ZooKeeperBackend {
            shared: Arc::new(Shared {
                cluster: self.cluster,
                root: self.root,
                config,
                session: Mutex::new(session),
                reconnecting: tokio::sync::Mutex::new(()),
            }),
        })
    }
}

impl ZooKeeperBackend {
    /// Connects with default settings to `cluster`, a ZooKeeper connect string
    /// (`host:port,host:port[/chroot]`).
    pub async fn connect(cluster: &str) -> Result<Self> {
        Self::builder(cluster).connect().await
    }

    /// Starts configuring a backend for the connect string `cluster`.
    pub fn builder(cluster: impl Into<String>) -> ZooKeeperBackendBuilder {
        ZooKeeperBackendBuilder {
            cluster: cluster.into(),
            root: "/locks".into(),
            config: ZkConfig {
                session_timeout: Duration::from_secs(10),
                connect_timeout: Duration::from_secs(5),
                poll_cap: Duration::from_secs(1),
                attempts: 3,
            },
        }
    }

    /// The lock node of the lock named `full_key` (`namespace:key`): its children are the queue.
    /// A Curator `InterProcessMutex` on this path shares the lock.
    #[must_use]
    pub fn lock_path(&self, full_key: &str) -> String {
        path::lock_path(&self.shared.root, full_key)
    }

    /// The ZooKeeper client of the current session (a new session is opened if the last one
    /// ended), for other recipes on the same session, operators and tests.
    pub async fn client(&self) -> Result<zk::Client> {
        Ok(self.session().await?.client.clone())
    }

    /// How many leases the current session holds.
    #[must_use]
    pub fn held_leases(&self) -> usize {
        lock(&self.shared.session).holding()
    }

    /// The current session, or a new one when it has ended.
    async fn session(&self) -> Result<Arc<Session>> {
        let current = lock(&self.shared.session).clone();
        if current.is_usable() {
            return Ok(current);
        }
        let _only_one = self.shared.reconnecting.lock().await;
        let current = lock(&self.shared.session).clone();
        if current.is_usable() {
            return Ok(current);
        }
        let config = &self.shared.config;
        tracing::info!("zookeeper session ended; opening a new one");
        let fresh = Session::connect(
            &self.shared.cluster,
            config.session_timeout,
            config.connect_timeout,
        )
        .await?;
        *lock(&self.shared.session) = fresh.clone();
        Ok(fresh)
    }

    /// Runs a request, sending it again when its connection was lost (reads only: writes decide
    /// themselves what a lost reply means).
    async fn retry<T, F, Fut>(&self, mut request: F) -> std::result::Result<T, zk::Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, zk::Error>>,
    {
        let mut failures = 0;
        loop {
            match request().await {
                Err(error)
                    if is_transient(&error) && failures + 1 < self.shared.config.attempts =>
                {
                    failures += 1;
                    tracing::debug!(%error, failures, "zookeeper request lost; sending again");
                    tokio::time::sleep(backoff(failures)).await;
                }
                outcome => return outcome,
            }
        }
    }
}

impl LockBackend for ZooKeeperBackend {
    type Lease = ZooKeeperLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(BACKEND);
        caps.push_wakeups = true;
        caps.loss_push = true;
        caps
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<ZooKeeperLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(BACKEND));
        }
        let dir = self.lock_path(request.key.full());
        let prefix = node_prefix(request.owner);
        let mut session = self.session().await?;
        let mut queued = match self.enqueue(&session, &dir, request.owner).await {
            Ok(queued) => queued,
            Err(error) if is_session_end(&error) => {
                // The session ended before its state watcher said so: one more try on a new one.
                session.retire();
                session = self.session().await?;
                self.enqueue(&session, &dir, request.owner).await?
            }
            Err(error) => return Err(error),
        };
        loop {
            let sent = Instant::now();
            let (place, earlier_own) = self.place(&session, &dir, &queued.node, &prefix).await?;
            if let Some(name) = earlier_own {
                // The same owner token queued before (a retried acquire): that node counts.
                let path = format!("{dir}/{name}");
                if let Ok(Some(stat)) = self.retry(|| session.client.check_stat(&path)).await {
                    let earlier = Node {
                        path,
                        name,
                        czxid: stat.czxid,
                    };
                    let ours =
                        std::mem::replace(&mut queued, queue::Queued::adopt(&session, earlier));
                    ours.remove().await;
                    continue;
                }
            }
            match place {
                Place::Holds => {
                    let node = queued.keep();
                    return Ok(Some(self.grant(session, node, request.ttl, sent)));
                }
                Place::Gone => {
                    drop(queued);
                    if !session.is_usable() {
                        return Err(LockError::unavailable(
                            BACKEND,
                            "the ZooKeeper session ended while waiting for the lock",
                        ));
                    }
                    // Deleted behind our back while waiting: queue again, at the end.
                    queued = self.enqueue(&session, &dir, request.owner).await?;
                }
                Place::Behind(ahead) => {
                    if request.deadline_passed() {
                        queued.remove().await;
                        return Ok(None);
                    }
                    let mut recheck_at =
                        Instant::now() + crate::backends::jitter(self.shared.config.poll_cap);
                    if let Some(deadline) = request.deadline {
                        recheck_at = recheck_at.min(deadline);
                    }
                    self.wait_for(&session, &dir, &ahead, recheck_at).await?;
                }
            }
        }
    }

    async fn renew(&self, lease: &ZooKeeperLease, ttl: Option<Duration>) -> Result<bool> {
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

    async fn release(&self, lease: &ZooKeeperLease) -> Result<bool> {
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

    /// Deletes every node of the lock's queue named with this owner's protection prefix
    /// (`_c_<owner uuid>-`). ZooKeeper runs one session's requests in the order they were sent,
    /// so the listing sees a node whose `create` was in flight when the acquire was dropped.
    async fn release_abandoned(
        &self,
        key: &LockKey,
        kind: LeaseKind,
        owner: OwnerToken,
    ) -> Result<bool> {
        if kind != LeaseKind::Exclusive {
            // Nothing of another kind is ever stored here (`acquire` refuses it).
            return Ok(false);
        }
        let dir = self.lock_path(key.full());
        let prefix = node_prefix(owner);
        let session = self.session().await?;
        let mut found = false;
        for name in self.children(&session, &dir).await? {
            if name.starts_with(&prefix) {
                queue::delete_quietly(&session, &format!("{dir}/{name}")).await;
                found = true;
            }
        }
        Ok(found)
    }
}

impl std::fmt::Debug for ZooKeeperBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZooKeeperBackend")
            .field("cluster", &self.shared.cluster)
            .field("root", &self.shared.root)
            .finish_non_exhaustive()
    }
}

/// True for an error saying the session has ended for good.
fn is_session_end(error: &LockError) -> bool {
    matches!(error, LockError::Unavailable { source, .. }
        if matches!(source.downcast_ref::<zk::Error>(),
            Some(zk::Error::SessionExpired | zk::Error::ClientClosed)))
}

fn to_lock_error(error: zk::Error) -> LockError {
    match error {
        zk::Error::BadArguments(why) => LockError::Protocol {
            backend: BACKEND,
            detail: format!("zookeeper refused a request: {why}"),
        },
        error => LockError::unavailable(BACKEND, error),
    }
}
