//! Leader election: one leader among the instances of a service, with a term that fences its
//! work, handed to the next candidate when the leader resigns, stops or dies.
//!
//! An [`Election`] is a named election on a [`LockClient`](crate::LockClient)'s backend.
//! [`campaign`](Election::campaign) waits until this participant leads and returns its
//! [`Leadership`]: the term ([`Leadership::fencing_token`], the lease's fencing token, larger than
//! every earlier leader's), [`lost()`](Leadership::lost) when leadership ends behind the
//! leader's back, and [`resign`](Leadership::resign). Anyone, candidate or not, reads the
//! current [`Leader`] with [`Election::leader`] or follows it with [`Election::observe`].
//!
//! ```
//! use lock_core::{LockClient, MemoryBackend};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! let locks = LockClient::new(MemoryBackend::new());
//! let election = locks.election("report-scheduler").participant("instance-a");
//!
//! let leadership = election.campaign().await?;
//! let leader = election.leader().await?.expect("someone leads");
//! assert_eq!(leader.participant, "instance-a");
//! assert_eq!(leader.fencing_token, leadership.fencing_token());
//!
//! tokio::select! {
//!     reason = leadership.lost() => eprintln!("no longer the leader: {reason}"),
//!     () = async { /* lead: schedule the reports, writing with leadership.fencing_token() */ } => {}
//! }
//! leadership.resign().await?;
//! # Ok(()) }
//! ```
//!
//! # How it is held
//! Leadership is a lease of [`LeaseKind::Leader`](crate::backend::LeaseKind::Leader): the
//! lock's machinery holds it (the watchdog renews it, `lost()` fires when it cannot, a dropped
//! campaign leaves nothing behind, a dead leader's lease runs out), and the candidates queue
//! in campaign order, as a fair lock's waiters do. Per store:
//!
//! | store | where | the term | a dead leader is replaced after |
//! |---|---|---|---|
//! | memory | in process | a counter | its lease (one process only) |
//! | Redis | `<prefix>:leader:{#<key>}` keys (holders, queue, fencing counter) and the leader's id beside them; each grant and release published for observers | the fencing counter, seeded from the server clock | its lease TTL |
//! | ZooKeeper | `EPHEMERAL_SEQUENTIAL` nodes `_c_<uuid>-latch-<sequence>` under `<root>/<key>%leader`, each holding its participant id: Curator's `LeaderLatch` layout, so a Java `LeaderLatch` on that path joins the same election | the leader node's mzxid (its grant's zxid) | its session timeout |
//! | etcd | `<prefix>/~leader/<key>/<owner token>` under a lease, each holding its participant id | the leader key's mod revision (its grant's) | its lease TTL |
//!
//! The SQL backends and RedLock do not hold elections
//! ([`Primitives::election`](crate::backend::Primitives::election)); campaigning there is
//! [`LockError::Unsupported`](crate::LockError::Unsupported).
//!
//! # What a term guarantees
//! A leader paused past its lease (a GC pause, a stopped VM) may still act once it wakes,
//! before it learns it lost: no lease can prevent that. What it cannot do is act *as the
//! current leader* on a resource that checks the term: each new leader's term is larger, so a
//! store that refuses writes older than the largest term it has seen (see
//! [`fenced`](crate::fenced)) refuses the old leader's. The tests kill and pause leaders and
//! count the writes a resource accepted with an older term: none.

mod handle;
mod leadership;
mod participant;
mod watch;

pub use self::handle::Election;
pub use self::leadership::Leadership;
pub use self::watch::LeaderWatch;
pub use crate::backend::Leader;
