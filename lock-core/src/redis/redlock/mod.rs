//! RedLock: one lock over N independent Redis masters (not a cluster, not replicas), granted
//! when a majority grants it, with a fencing token that never goes backwards.
//!
//! ```no_run
//! use lock_core::{LockClient, RedLock};
//!
//! # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
//! let nodes = ["redis://10.0.0.1:6379/", "redis://10.0.0.2:6379/", "redis://10.0.0.3:6379/"];
//! let locks = LockClient::builder(RedLock::connect(&nodes).await?)
//!     .namespace("shop")
//!     .build()?;
//! let guard = locks.lock("sku:42").await?;
//! let token = guard.fencing_token(); // pass it to the store you write to
//! # let _ = token;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # The algorithm
//! An acquisition sends a lock script to every node at once (each node's lock key holds
//! `<owner>:<node counter>` with the lease as its TTL, as a lone [`RedisBackend`] keeps it;
//! unlike a lone client's, a key still held under the same owner token from an earlier round
//! gets a fresh counter, see below), each node given the node timeout (50 ms by default, see
//! [`RedLockBuilder::node_timeout`]). It is granted when a majority (`N / 2 + 1`) grants it;
//! the lease is trusted from when the scripts were sent, for the TTL less the drift margin
//! (`TTL / 100 + 2 ms`), on the monotonic clock, as every lease of the client is. Otherwise
//! every node is released, including those that did not answer (their grant may still land;
//! the release goes on the same connection, so it lands after it), and the acquisition tries
//! again after a random pause (about [`RedLockBuilder::retry_delay`]) until its deadline.
//! When fewer than a majority answer at all, it fails with
//! [`LockError::Unavailable`] at once (fail-closed, as a lone
//! server that is down). An acquisition stops waiting once a quorum granted, so a slow node
//! costs it nothing; a grant that lands there afterwards is this lease's too. Renewals go to
//! every node (by the grant's value where the node answered in time, by its owner token where
//! it did not) and need a majority too; when a majority can no longer confirm the lease, the
//! watchdog fires [`lost()`](crate::LockGuard::lost).
//!
//! # The fencing token, and why it never goes backwards
//! Martin Kleppmann's critique of RedLock ("How to do distributed locking", 2016) is that its
//! safety rests on timing (bounded pauses, network delays and clock drift), and that it cannot
//! produce a fencing token to make a late holder harmless. Here each node keeps a counter per
//! key (the lone node's fencing counter). The lock script on a node increments it when it
//! grants there. The grant's token comes from the counters the quorum answered with:
//!
//! 1. Let `c` be the largest counter a grant saw. Before the token is handed out, a quorum of
//!    nodes must have counter `≥ c`: those whose own increment answered `c` already do (in
//!    the steady state every node answers the same `c`, so this costs nothing); otherwise
//!    `c` is written as a floor on every node (`raise_fence.lua`, which never lowers a
//!    counter), and the grant waits for a quorum of them to confirm, or fails.
//! 2. The token is `c × 16 + i`, where `i` is the first node that answered `c`.
//!
//! **Claim:** a grant whose lock scripts are sent after token `T` was handed out gets a
//! token larger than `T`. Any two majorities of the same N nodes share a node. The later
//! grant's quorum shares one with the quorum whose counters were `≥ c` when `T` was handed
//! out; counters never go down (a floor never lowers one, an increment raises it), so that
//! node's increment answers at least `c + 1`. Hence the later grant's largest counter is at
//! least `c + 1`, and its token at least `(c + 1) × 16 > c × 16 + 15 ≥ T`. This needs no
//! bound on pauses, delays or clocks: a holder paused past its lease can only write with a
//! token smaller than the next holder's, which a fenced store
//! ([`FencedStore`](crate::fenced)) refuses. Two grants that do overlap in time (RedLock's
//! timing assumptions broken) never share a token either: the same node's increment never
//! answers the same counter twice, and `i` tells the nodes apart.
//!
//! Each grant's counters are fresh increments: a node that still holds the key under the same
//! owner token from a failed round of the same acquisition (its give-back did not reach it)
//! increments again rather than answer that round's counter, which may be older than a token
//! handed out since (`node_acquire.lua`).
//!
//! **Limit: nodes restarted without persistence.** A node that restarts empty has lost its
//! counters (and its lock keys: Redis's own advice is to keep a restarted node out for a TTL).
//! Its next grant seeds the counter from its clock in microseconds, which is past every
//! counter ever given out (each was seeded from a clock and grew by one per grant, and every
//! grant takes more than a microsecond), so tokens still go up, as long as the restarted
//! node's clock is not behind the clock that seeded the counters by more than the time since
//! those grants. A node whose clock was stepped back by more than that, restarted empty, and
//! part of the only quorum that intersects the last token's can give a smaller token; keep
//! persistence on (AOF `everysec` loses at most a second of increments, which the seeding
//! covers), or clocks in step (NTP), on RedLock nodes.
//!
//! # Limits
//! Only the lock ([`LeaseKind::Exclusive`](crate::backend::LeaseKind::Exclusive)): the fair
//! lock, read-write lock, semaphore and latch need one store's queue. A waiter retries after
//! a random pause rather than being woken, so a hand-over takes about a pause.

mod backend;
mod builder;
mod fan_out;
mod lease;
mod node;
mod node_acquire;
mod renew_owned;
mod token;

use std::sync::Arc;
use std::time::Duration;

pub use self::builder::RedLockBuilder;
pub use self::lease::RedLockLease;
use self::node::Node;
use crate::{LockError, RedisBackend, Result};

const BACKEND: &str = "redlock";

/// RedLock's own scripts, which every [`RedisBackend`] loads when it connects with the
/// others: a node's first call of one would otherwise cost a `NOSCRIPT` answer and a load,
/// and a call the fan-out stops waiting for would never be sent again (a late grant lost).
pub(super) fn scripts() -> [&'static redis::Script; 3] {
    [
        &node_acquire::NODE_ACQUIRE,
        &token::RAISE_FENCE,
        &renew_owned::RENEW_OWNED,
    ]
}

/// A lock backend over several independent Redis servers: the RedLock algorithm, with a
/// fencing token that never goes backwards (see the [module docs](self)).
///
/// Cheap to clone: clones share the nodes' connections.
#[derive(Clone, Debug)]
pub struct RedLock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    nodes: Vec<Node>,
    quorum: usize,
    node_timeout: Duration,
    retry_delay: Duration,
}

impl RedLock {
    /// A RedLock over `nodes` with default settings (see [`RedLockBuilder`]).
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for fewer than 3 nodes,
    /// more than 16, or the same backend twice.
    ///
    /// ```no_run
    /// use lock_core::{RedLock, RedisBackend};
    ///
    /// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
    /// let mut nodes = Vec::new();
    /// for url in ["redis://10.0.0.1/", "redis://10.0.0.2/", "redis://10.0.0.3/"] {
    ///     nodes.push(RedisBackend::connect(url).await?);
    /// }
    /// let redlock = RedLock::new(nodes)?;
    /// assert_eq!(redlock.quorum(), 2);
    /// # Ok(()) }
    /// ```
    pub fn new(nodes: Vec<RedisBackend>) -> Result<Self> {
        Self::builder(nodes).build()
    }

    /// Starts configuring a RedLock over `nodes`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use lock_core::{RedLock, RedisBackend};
    ///
    /// # async fn example(nodes: Vec<RedisBackend>) -> Result<(), lock_core::LockError> {
    /// let redlock = RedLock::builder(nodes)
    ///     .node_timeout(Duration::from_millis(20))
    ///     .build()?;
    /// # let _ = redlock; Ok(()) }
    /// ```
    pub fn builder(nodes: Vec<RedisBackend>) -> RedLockBuilder {
        RedLockBuilder::new(nodes)
    }

    /// Connects to each of `urls` with default settings ([`RedisBackend::connect`]), all at
    /// once, and makes a RedLock over them. A minority may be unreachable now: the RedLock
    /// starts with the others, connects to those in the background (again and again, up to
    /// every 5 s), and counts them as not answering until then; errors name them
    /// (`node 2 (10.0.0.3:6379) not connected: ...`). A majority unreachable is an error
    /// naming each of them, since no lock could be granted.
    ///
    /// ```no_run
    /// use lock_core::{LockClient, RedLock};
    ///
    /// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
    /// // Starts even while one of the three is down.
    /// let redlock = RedLock::connect(&["redis://10.0.0.1/", "redis://10.0.0.2/", "redis://10.0.0.3/"]).await?;
    /// println!("{} of 3 nodes connected", redlock.nodes().iter().flatten().count());
    /// let locks = LockClient::new(redlock);
    /// # drop(locks); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for fewer than 3 URLs, more than 16, or one URL twice;
    /// [`LockError::Unavailable`] naming the unreachable nodes when fewer than a majority
    /// answer.
    pub async fn connect(urls: &[&str]) -> Result<Self> {
        for (i, url) in urls.iter().enumerate() {
            if urls[..i].contains(url) {
                return Err(LockError::InvalidConfig(format!(
                    "RedLock node {i} ({}) is listed twice: each node must be a server of its own",
                    node::address_of(url)
                )));
            }
        }
        let connected =
            futures_util::future::join_all(urls.iter().map(|url| RedisBackend::connect(url))).await;
        let reachable = connected.iter().filter(|c| c.is_ok()).count();
        let quorum = urls.len() / 2 + 1;
        if reachable < quorum && (builder::MIN_NODES..=token::NODE_SLOTS).contains(&urls.len()) {
            let unreachable: Vec<String> = connected
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let error = c.as_ref().err()?;
                    let address = node::address_of(urls[i]);
                    Some(format!("node {i} ({address}): {}", error.with_causes()))
                })
                .collect();
            return Err(LockError::unavailable(
                BACKEND,
                format!(
                    "{reachable} of {} nodes reachable, {quorum} needed: {}",
                    urls.len(),
                    unreachable.join("; ")
                ),
            ));
        }
        let nodes = connected
            .into_iter()
            .enumerate()
            .map(|(i, connected)| match connected {
                Ok(backend) => Node::connected(i, backend),
                Err(error) => Node::connecting(i, urls[i], &error),
            })
            .collect();
        RedLockBuilder::from_nodes(nodes).build()
    }

    /// Each node in the order given: its backend, or `None` while it is not connected (see
    /// [`connect`](Self::connect)).
    #[must_use]
    pub fn nodes(&self) -> Vec<Option<RedisBackend>> {
        self.inner
            .nodes
            .iter()
            .map(|node| node.backend().cloned())
            .collect()
    }

    /// How many nodes must grant (or renew) a lease: a majority, `N / 2 + 1`.
    #[must_use]
    pub fn quorum(&self) -> usize {
        self.inner.quorum
    }
}
