//! The ZooKeeper backend (feature `zookeeper`): Curator's lock recipe, an ephemeral sequential
//! node per acquisition, the lowest one holds, each waiter watches only the node just ahead;
//! and on the same queue machinery the fair lock, the read-write lock (Curator's node names)
//! and the semaphore, plus a count-down latch node.
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
//! # The other primitives
//! Each has a node of its own beside the lock's, named by a suffix ([`primitive_path`]:
//! `%fair`, `%rw`, `%semaphore`, and [`latch_path`]: `%latch`), and every queue is granted by the
//! one rule of the ordered-queue backends (`queue_rule::admit`), read off the children's names:
//! - **Fair lock**: the lock's recipe in its own directory. ZooKeeper's queue is already first
//!   come, first served without barging: a newcomer's node goes behind every waiter's.
//! - **Read-write lock**: Curator's `InterProcessReadWriteLock` names, `_c_<uuid>-__READ__` and
//!   `_c_<uuid>-__WRIT__`, so Curator's readers and writers share the queue. A reader holds
//!   while no writer is ahead of it and watches the last writer ahead; a writer holds when
//!   first and watches the node just ahead. A writer's own read (a downgrade) is the node
//!   `_c_<uuid>-beside-<writer's sequence>-__READ__`, created in one transaction with a check
//!   that the write node (found by the writer's owner uuid) exists; it stands right behind its
//!   writer in the queue, so writers queued after that one wait for it too.
//! - **Semaphore**: nodes `_c_<uuid>-permits-<count>-`, its size in a persistent `size` child;
//!   a waiter watches the children and the size (see `semaphore.rs`).
//! - **Count-down latch**: one persistent node with the count and the expiry in its data,
//!   changed by versioned writes, waited on with a data watch (see `latch.rs`).
//!
//! # Fencing
//! The fencing token is the holder node's `czxid`: ZooKeeper's transaction id, which increases
//! across the whole ensemble, so it keeps increasing even when the lock's container node was
//! reaped and re-created (the sequence number would restart). The same holds for every kind of
//! lease: a writer's token is larger than every read's granted before it. Two exceptions, both
//! the zxid of a write the grant makes (the node's `mzxid` then): a permit's token is that of
//! its `held` mark, and a node queued before a forced release, granted after it, takes a fresh
//! token, so that every grant after a forced release has a larger token than the release's
//! (see `fence.rs`).
//!
//! # Labels and the operator's view
//! A node's data carries the request's [`HolderLabel`](crate::HolderLabel) (`label <label>`, in
//! the create that queues it; see `node_data.rs`), except an election candidate's, whose data
//! is its participant id as Curator's `LeaderLatch` reads it. The node's `ctime` is when it
//! queued. Inspection, listing, forced release and the audit records (persistent sequential
//! nodes under `<root>/%audit/<key>`) are described in `operator/mod.rs`.
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
//!   node), and renewals check the node too. A node a forced release deleted fires it as
//!   [`LostReason::Revoked`](crate::LostReason::Revoked): the watch reads the release's audit
//!   record (one listing and one read) before it fires.
//!
//! # TLS and authentication
//! With `zookeeper-tls`, servers named `tcp+tls://host:port` in the connect string are reached
//! over TLS, verified against the CA given to
//! [`ca_certificate_pem`](ZooKeeperBackendBuilder::ca_certificate_pem) (required:
//! zookeeper-client has no public roots), with a client certificate from
//! [`client_identity_pem`](ZooKeeperBackendBuilder::client_identity_pem). With
//! `zookeeper-sasl`, every session authenticates with SASL DIGEST-MD5
//! ([`sasl_digest_md5`](ZooKeeperBackendBuilder::sasl_digest_md5)). The nodes lock-core
//! creates are open to every session (`Acls::anyone_all()`, as Curator's): who may lock is
//! decided by who may open a session.
//!
//! # Round trips
//! An uncontended acquire is a create and a children listing (plus a create of the lock node
//! the first time); a release is one delete. A waiter adds a listing and an `exists` watch per
//! wake-up: a release wakes only the waiter behind it. Should a watch event be lost, a waiter
//! also checks the node it waits for and its own on a capped, jittered timer ([`poll_cap`]):
//! two `exists`, whatever the queue's length (a semaphore's waiters, which watch the whole queue,
//! list it again).
//!
//! A semaphore acquire adds a read of the size (one multi-read with the listing) and a
//! `setData` marking the granted node. The listing of the other primitives is a
//! `getChildren2`, whose reply carries the directory's `mzxid` (see `fence.rs`): a grant adds a
//! write only when a forced release happened after its node was queued.
//!
//! [`poll_cap`]: ZooKeeperBackendBuilder::poll_cap
//! [`primitive_path`]: ZooKeeperBackend::primitive_path
//! [`latch_path`]: ZooKeeperBackend::latch_path

mod acquire;
mod builder;
mod election;
mod fence;
mod held;
mod kinds;
mod latch;
mod node_data;
mod operator;
mod path;
mod queue;
mod security;
mod semaphore;
mod session;

use std::future::Future;
use std::sync::{Arc, Mutex};
use zookeeper_client as zk;

use self::builder::ZkConfig;
pub use self::builder::ZooKeeperBackendBuilder;
use self::kinds::Family;
use self::queue::{backoff, is_transient, Node};
use self::session::Session;
use crate::backend::expiry::Expiry;
use crate::backend::LeaseKind;
use crate::breaker::Breaker;
use crate::sync::lock;
use crate::{LockError, Result};

const BACKEND: &str = "zookeeper";

/// Locks (and fair locks, read-write locks, semaphores and latches) in a ZooKeeper ensemble,
/// compatible with Curator's `InterProcessMutex` and `InterProcessReadWriteLock`.
///
/// Cheap to clone: clones share one session.
#[derive(Clone)]
pub struct ZooKeeperBackend {
    shared: Arc<Shared>,
}

struct Shared {
    cluster: String,
    /// TLS and SASL settings of every session.
    security: security::Prepared,
    root: String,
    config: ZkConfig,
    session: Mutex<Arc<Session>>,
    /// Held while a new session is opened, so concurrent callers open only one.
    reconnecting: tokio::sync::Mutex<()>,
    /// The circuit breaker of the connection to the ensemble: every call of the backend goes
    /// through it (see [`ZooKeeperBackend::guarded`]).
    breaker: Breaker,
}

/// A lease held in ZooKeeper: our node in the primitive's queue, on one session.
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

impl ZooKeeperBackend {
    /// The lock node of the lock named `full_key` (`namespace:key`): its children are the queue.
    /// A Curator `InterProcessMutex` on this path shares the lock.
    #[must_use]
    pub fn lock_path(&self, full_key: &str) -> String {
        path::lock_path(&self.shared.root, full_key)
    }

    /// The node of the primitive `kind` leases of are queued under for `full_key`: the lock's
    /// path for [`LeaseKind::Exclusive`], plus `%fair`, `%rw`, `%semaphore` or `%leader` for
    /// the others. A Curator `InterProcessReadWriteLock` on the `%rw` path shares the
    /// read-write lock; a Curator `LeaderLatch` on the `%leader` path joins the election.
    #[must_use]
    pub fn primitive_path(&self, kind: LeaseKind, full_key: &str) -> String {
        self.primitive_dir(Family::of(kind), full_key)
    }

    /// The node that holds the count-down latch `full_key` (the lock's path plus `%latch`).
    #[must_use]
    pub fn latch_path(&self, full_key: &str) -> String {
        path::primitive_path(&self.shared.root, full_key, latch::LATCH_SUFFIX)
    }

    fn primitive_dir(&self, family: Family, full_key: &str) -> String {
        path::primitive_path(&self.shared.root, full_key, family.suffix())
    }

    /// The ZooKeeper client of the current session (a new session is opened if the last one
    /// ended), for other recipes on the same session, operators and tests.
    pub async fn client(&self) -> Result<zk::Client> {
        Ok(self.session().await?.client.clone())
    }

    /// The [circuit breaker](crate::breaker) of the connection to the ensemble.
    #[must_use]
    pub fn breaker(&self) -> &Breaker {
        &self.shared.breaker
    }

    /// Runs one call of the backend through the breaker. A call is settled as a whole (a
    /// waiting acquire when it ends), as its requests go out at many places on the session.
    async fn guarded<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        let admission = self.shared.breaker.admit()?;
        let outcome = call.await;
        match &outcome {
            Err(error) if is_unreachable(error) => admission.unavailable(error.with_causes()),
            _ => admission.answered(),
        }
        outcome
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
        tracing::debug!("zookeeper session ended; opening a new one");
        let fresh = Session::connect(
            &self.shared.cluster,
            &self.shared.security,
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

    /// After a write that failed with `error` (`failures` counts such failures, this one
    /// too): the backoff waited when the write may be sent again (its reply was lost), or the
    /// error when it is not transient or the attempts are spent. What a lost reply means is the
    /// caller's to decide before sending again.
    async fn write_failed(&self, failures: &mut u32, error: zk::Error) -> Result<()> {
        *failures += 1;
        if !is_transient(&error) || *failures >= self.shared.config.attempts {
            return Err(to_lock_error(error));
        }
        tokio::time::sleep(backoff(*failures)).await;
        Ok(())
    }

    /// The data and stat of the nodes `paths`, in one multi-read, sent again when its
    /// connection was lost (see [`retry`](Self::retry)); a node that is gone answers so in its
    /// place.
    async fn read_data(
        &self,
        session: &Session,
        paths: &[String],
    ) -> Result<Vec<zk::MultiReadResult>> {
        let client = &session.client;
        self.retry(|| async move {
            let mut reader = client.new_multi_reader();
            for path in paths {
                reader.add_get_data(path)?;
            }
            reader.commit().await
        })
        .await
        .map_err(to_lock_error)
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

/// True for an availability failure: no connection to the ensemble (no host reachable, the
/// connection lost, no answer in time, the server throttling). Answers such as "no node",
/// "node exists" or "session expired" prove the ensemble is there.
fn is_unreachable(error: &LockError) -> bool {
    match error {
        LockError::Timeout { .. } => true,
        LockError::Unavailable { source, .. } => {
            source.downcast_ref::<zk::Error>().is_some_and(|error| {
                matches!(
                    error,
                    zk::Error::NoHosts
                        | zk::Error::Timeout
                        | zk::Error::ConnectionLoss
                        | zk::Error::Throttled
                )
            })
        }
        _ => false,
    }
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
