//! The conformance suites (the lock's and the primitives') on a real ZooKeeper server, plus
//! ZooKeeper-specific checks: session loss, Curator interoperability (lock and read-write
//! lock), fencing across a re-created lock node, each primitive's own nodes, and the
//! operator's view (`zookeeper_operator.rs`).
//!
//! The server comes from `LOCK_TEST_ZOOKEEPER_URL` (a connect string such as
//! `127.0.0.1:22181`; `cargo xtask test` starts one and sets it). Without it the suite fails
//! when `LOCK_TEST_REQUIRE_SERVERS=1` or `CI` is set, and otherwise says loudly that it skipped.

use std::future::IntoFuture;
use std::time::Duration;

use lock_core::backend::LeaseKind;
use lock_core::zookeeper::ZooKeeperBackendBuilder;
use lock_core::{LockClient, LockError, LostReason, ZooKeeperBackend};
use tokio::time::{timeout, Instant};
use zookeeper_client as zk;

use crate::conformance::{self, conformance_suite, unique_key, Harness};
use crate::primitives::primitives_suite;
use crate::primitives::read_write::try_read;
use crate::proxy_support::Proxy;

pub(crate) struct ZooKeeper {
    url: String,
    admin: zk::Client,
    names: ZooKeeperBackend,
    /// The settings of every backend the suite connects (the connect string, and for the TLS
    /// server its CA and SASL user).
    builder: Box<dyn Fn() -> ZooKeeperBackendBuilder + Send + Sync>,
}

fn server_url() -> Option<String> {
    lock_testing::server_url("LOCK_TEST_ZOOKEEPER_URL").unwrap_or_else(|e| panic!("{e}"))
}

async fn zookeeper() -> Option<ZooKeeper> {
    let url = server_url()?;
    let admin = zk::Client::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach ZooKeeper at {url}: {e}"));
    let connect_string = url.clone();
    Some(
        ZooKeeper::on(url, admin, move || {
            ZooKeeperBackend::builder(&connect_string)
        })
        .await,
    )
}

impl ZooKeeper {
    /// The harness on the server at `url`, read behind the backends' backs with `admin`, its
    /// backends made by `builder`.
    pub(crate) async fn on(
        url: String,
        admin: zk::Client,
        builder: impl Fn() -> ZooKeeperBackendBuilder + Send + Sync + 'static,
    ) -> Self {
        let names = builder().connect().await.unwrap();
        ZooKeeper {
            url,
            admin,
            names,
            builder: Box::new(builder),
        }
    }

    /// The lock's queue, in Curator's order (by the sequence after `lock-`).
    async fn queue(&self, full_key: &str) -> Vec<String> {
        let path = self.names.lock_path(full_key);
        let mut children = match self.admin.list_children(&path).await {
            Ok(children) => children,
            Err(zk::Error::NoNode) => Vec::new(),
            Err(e) => panic!("listing {path}: {e}"),
        };
        children.sort_by_key(|c| c.rsplit("lock-").next().unwrap_or_default().to_owned());
        children
    }
}

impl Harness for ZooKeeper {
    async fn client(&self) -> LockClient {
        conformance::client_on((self.builder)().connect().await.unwrap())
    }

    async fn delete_behind(&self, full_key: &str) {
        let queue = self.queue(full_key).await;
        let holder = queue.first().expect("nothing to delete");
        let path = format!("{}/{holder}", self.names.lock_path(full_key));
        self.admin.delete(&path, None).await.unwrap();
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.queue(full_key).await.len().saturating_sub(1)
    }
}

conformance_suite!(zookeeper());
primitives_suite!(zookeeper());

#[path = "zookeeper_operator.rs"]
mod operator;

/// An unreachable server is a typed, fail-closed error, quickly; a bad root is refused.
#[tokio::test]
async fn unreachable_server_is_unavailable() {
    let unreachable =
        ZooKeeperBackend::builder("127.0.0.1:1").connect_timeout(Duration::from_millis(500));
    conformance::unavailable_quickly(unreachable.connect()).await;
    let bad_root = ZooKeeperBackend::builder("127.0.0.1:1").root("/");
    conformance::refused_as_config(bad_root.connect()).await;
}

/// Our nodes use Curator's names, and a node created by hand the way Curator's
/// `InterProcessMutex` creates it (on another session) holds the lock against us.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_node_excludes_us_and_ours_look_like_curators() {
    let Some(h) = zookeeper().await else { return };
    let client = h.client().await;
    let key = unique_key("curator");
    let full = format!("conformance:{key}");
    let dir = h.names.lock_path(&full);

    let ours = client.lock(&key).await.unwrap();
    let queue = h.queue(&full).await;
    assert_eq!(queue.len(), 1);
    let name = &queue[0];
    let (uuid, sequence) = name
        .strip_prefix("_c_")
        .and_then(|rest| rest.split_once("-lock-"))
        .unwrap_or_else(|| panic!("not Curator's layout: {name}"));
    assert_eq!(uuid.len(), 36, "{uuid}");
    assert_eq!(uuid.matches('-').count(), 4, "{uuid}");
    assert!(sequence.len() == 10 && sequence.chars().all(|c| c.is_ascii_digit()));
    ours.release().await.unwrap();

    // Another client's Curator: protected, ephemeral sequential, under the same path.
    let curator = zk::Client::connect(&h.url).await.unwrap();
    let (_, seq) = curator
        .create(
            &format!("{dir}/_c_9b2f3c4e-0000-4000-8000-00000000c0de-lock-"),
            b"10.0.0.7",
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    assert!(client.lock(&key).try_acquire().await.unwrap().is_none());
    let started = Instant::now();
    let waited = client
        .lock(&key)
        .acquire_within(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(waited.is_none() && started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        h.queued(&full).await,
        0,
        "timed-out waiters left nodes behind"
    );

    // Curator releases: we are woken and hold it.
    let waiter = tokio::spawn({
        let (client, key) = (client.clone(), key.clone());
        async move { client.lock(&key).await.unwrap() }
    });
    conformance::eventually("our waiter queued behind Curator's node", || async {
        h.queued(&full).await == 1
    })
    .await;
    curator
        .delete(
            &format!("{dir}/_c_9b2f3c4e-0000-4000-8000-00000000c0de-lock-{seq}"),
            None,
        )
        .await
        .unwrap();
    let guard = timeout(Duration::from_secs(2), waiter)
        .await
        .expect("not woken by Curator's release")
        .unwrap();
    assert!(guard.release().await.unwrap());
}

/// Elections are Curator's `LeaderLatch` layout: our candidates' nodes are
/// `_c_<uuid>-latch-<sequence>` holding their participant id; a `LeaderLatch` node created by
/// hand on another session (as Java's would be) leads ahead of ours, is read as the leader with
/// its id, and once it goes our candidate leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_use_curators_leader_latch_layout() {
    let Some(h) = zookeeper().await else { return };
    let client = h.client().await;
    let name = unique_key("latch");
    let dir = h
        .names
        .primitive_path(LeaseKind::Leader, &format!("conformance:{name}"));
    assert!(dir.ends_with("%leader"), "{dir}");
    let election = client.election(&name).participant("rust-1");

    let ours = election.campaign().await.unwrap();
    let children = h.admin.list_children(&dir).await.unwrap();
    let [node] = children.as_slice() else {
        panic!("one node expected: {children:?}")
    };
    let (uuid, sequence) = node
        .strip_prefix("_c_")
        .and_then(|rest| rest.split_once("-latch-"))
        .unwrap_or_else(|| panic!("not LeaderLatch's layout: {node}"));
    assert_eq!((uuid.len(), uuid.matches('-').count()), (36, 4), "{uuid}");
    assert!(sequence.len() == 10 && sequence.chars().all(|c| c.is_ascii_digit()));
    let (data, _) = h.admin.get_data(&format!("{dir}/{node}")).await.unwrap();
    assert_eq!(data, b"rust-1");
    ours.resign().await.unwrap();

    // A Java LeaderLatch on another session: it leads, by its id and its node's czxid.
    let java = zk::Client::connect(&h.url).await.unwrap();
    let prefix = "_c_3f1d2a9e-0000-4000-8000-00000000ca7c-latch-";
    let (stat, seq) = java
        .create(
            &format!("{dir}/{prefix}"),
            b"java-1",
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let leader = election
        .leader()
        .await
        .unwrap()
        .expect("the Java latch leads");
    assert_eq!(leader.participant, "java-1");
    assert_eq!(
        leader.fencing_token.get(),
        u64::try_from(stat.czxid).unwrap()
    );
    assert!(election.try_campaign().await.unwrap().is_none());
    let waiting = tokio::spawn({
        let election = election.clone();
        async move { election.campaign().await.unwrap() }
    });
    conformance::eventually("our candidate queued behind the Java latch", || async {
        h.admin.list_children(&dir).await.unwrap().len() == 2
    })
    .await;
    java.delete(&format!("{dir}/{prefix}{seq}"), None)
        .await
        .unwrap();
    let ours = timeout(Duration::from_secs(5), waiting)
        .await
        .expect("not leading once the Java latch closed")
        .unwrap();
    assert!(ours.fencing_token() > leader.fencing_token);
    assert_eq!(
        election.leader().await.unwrap().unwrap().participant,
        "rust-1"
    );
    ours.resign().await.unwrap();
}

/// A holder cut off from ZooKeeper for longer than its session timeout: `lost()` fires as
/// soon as the connection drops (suspended), the server expires the session and deletes the
/// node, so the lock goes to the next owner; once the network is back the backend learns the
/// session expired and opens a new one for later calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_fires_lost_and_frees_the_lock() {
    let Some(h) = zookeeper().await else { return };
    let proxy = Proxy::start(&h.url).await;
    let backend = ZooKeeperBackend::builder(&proxy.addr)
        .session_timeout(Duration::from_secs(4))
        .connect()
        .await
        .unwrap();
    let a = LockClient::builder(backend.clone())
        .namespace("conformance")
        .build()
        .unwrap();
    let b = h.client().await;
    let key = unique_key("expiry");
    let guard = a.lock(&key).await.unwrap();
    assert_eq!(backend.held_leases(), 1);
    let full = guard.key().full().to_owned();
    assert_eq!(h.queue(&full).await.len(), 1);

    let cut_at = Instant::now();
    proxy.cut();
    let reason = timeout(Duration::from_secs(1), guard.lost())
        .await
        .expect("lost() did not fire when the connection dropped");
    assert!(matches!(reason, LostReason::SessionLost(_)), "{reason:?}");

    // The server expires the session after its timeout (4 s, checked per 1 s tick).
    let next = b
        .lock(&key)
        .acquire_within(Duration::from_secs(15))
        .await
        .unwrap();
    assert!(next.is_some(), "the expired session's node stayed");
    let freed_after = cut_at.elapsed();
    assert!(
        freed_after >= Duration::from_secs(3),
        "the lock was free {freed_after:?} after the cut, before the session could expire"
    );
    eprintln!("lock free {freed_after:?} after the holder was cut off");

    proxy.restore();
    assert!(!guard.release().await.unwrap());
    drop(next);

    // The backend opens a new session for later calls.
    let again = timeout(Duration::from_secs(15), a.lock(unique_key("after-expiry")))
        .await
        .expect("no new session after expiry")
        .unwrap();
    assert!(again.release().await.unwrap());
}

/// Fencing tokens keep increasing when the lock's container node is removed and re-created
/// (they are czxids, not per-node sequence numbers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_survives_a_recreated_lock_node() {
    let Some(h) = zookeeper().await else { return };
    let client = h.client().await;
    let key = unique_key("fence-recreate");
    let first = client.lock(&key).await.unwrap();
    let before = first.fencing_token();
    first.release().await.unwrap();
    let dir = h.names.lock_path(&format!("conformance:{key}"));
    match h.admin.delete(&dir, None).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(e) => panic!("deleting {dir}: {e}"),
    }
    let second = client.lock(&key).await.unwrap();
    assert!(second.fencing_token() > before);
    second.release().await.unwrap();
}

impl ZooKeeper {
    /// The children of the node of `kind`'s primitive for `full_key`, sorted by name.
    async fn children_of(&self, kind: LeaseKind, full_key: &str) -> Vec<String> {
        let path = self.names.primitive_path(kind, full_key);
        let mut children = match self.admin.list_children(&path).await {
            Ok(children) => children,
            Err(zk::Error::NoNode) => Vec::new(),
            Err(e) => panic!("listing {path}: {e}"),
        };
        children.sort();
        children
    }
}

/// A fair lock, a read-write lock and a semaphore named like a lock are other primitives: each
/// is granted beside the others, in a node of its own, with nodes named as the docs say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primitives_have_their_own_nodes() {
    let Some(h) = zookeeper().await else { return };
    let client = h.client().await;
    let key = unique_key("kinds");
    let full = format!("conformance:{key}");
    let lock = client.lock(&key).try_acquire().await.unwrap().unwrap();
    let fair = client.fair_lock(&key).try_acquire().await.unwrap();
    let write = client.read_write_lock(&key).write().try_acquire().await;
    let permits = client.semaphore(&key, 3).acquire(2).try_acquire().await;
    let (fair, write, permits) = (
        fair.expect("the fair lock is not the lock"),
        write.unwrap().expect("the read-write lock is not the lock"),
        permits.unwrap().expect("the semaphore is not the lock"),
    );
    let one = |kind| {
        let h = &h;
        let full = full.clone();
        async move {
            let children = h.children_of(kind, &full).await;
            assert_eq!(children.len(), 1, "{kind:?}: {children:?}");
            children[0].clone()
        }
    };
    assert!(one(LeaseKind::Exclusive).await.contains("-lock-"));
    assert!(one(LeaseKind::Fair).await.contains("-lock-"));
    assert!(one(LeaseKind::Write).await.contains("-__WRIT__"));
    let semaphore = h
        .children_of(LeaseKind::Permits { count: 1, limit: 1 }, &full)
        .await;
    assert_eq!(semaphore.len(), 2, "{semaphore:?}");
    assert!(semaphore[0].starts_with("_c_") && semaphore[0].contains("-permits-2-"));
    assert_eq!(semaphore[1], "size");
    let dir = h.names.primitive_path(LeaseKind::Fair, &full);
    assert_eq!(dir, format!("{}%fair", h.names.lock_path(&full)));

    let latch = client.latch(&key);
    assert!(latch.try_set_count(2).await.unwrap());
    let (data, _) = h.admin.get_data(&h.names.latch_path(&full)).await.unwrap();
    assert!(String::from_utf8(data).unwrap().starts_with("2 "));
    assert_eq!(latch.count_down().await.unwrap(), 1);
    assert_eq!(latch.count_down().await.unwrap(), 0);
    assert_eq!(
        h.admin
            .check_stat(&h.names.latch_path(&full))
            .await
            .unwrap(),
        None,
        "an open latch leaves no node"
    );

    for guard in [lock, fair, write, permits] {
        assert!(guard.release().await.unwrap());
    }
    assert!(h.children_of(LeaseKind::Write, &full).await.is_empty());
}

/// Curator's `InterProcessReadWriteLock` nodes (`_c_<uuid>-__WRIT__` / `__READ__`, created by
/// hand on another session) order in the same queue as ours: a Curator writer excludes our
/// readers and writers; a Curator reader shares with our readers and excludes our writers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_read_write_nodes_share_our_queue() {
    let Some(h) = zookeeper().await else { return };
    let client = h.client().await;
    let key = unique_key("curator-rw");
    let full = format!("conformance:{key}");
    let dir = h.names.primitive_path(LeaseKind::Write, &full);
    let curator = zk::Client::connect(&h.url).await.unwrap();
    let containers = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    curator.mkdir(&dir, &containers).await.unwrap();
    let create = |name: &'static str| {
        let (curator, dir) = (&curator, &dir);
        async move {
            let prefix = format!("{dir}/_c_9b2f3c4e-0000-4000-8000-00000000c0de-{name}");
            let mode = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
            let (_, seq) = curator.create(&prefix, b"", &mode).await.unwrap();
            format!("{prefix}{seq}")
        }
    };
    let rw = client.read_write_lock(&key);

    let writer = create("__WRIT__").await;
    assert!(rw.read().try_acquire().await.unwrap().is_none());
    assert!(rw.write().try_acquire().await.unwrap().is_none());
    let reader = tokio::spawn({
        let (client, key) = (client.clone(), key.clone());
        async move { client.read_write_lock(&key).read().await.unwrap() }
    });
    conformance::eventually("our reader queued behind Curator's writer", || async {
        client.queue_length(LeaseKind::Read, &key).await.unwrap() == 1
    })
    .await;
    curator.delete(&writer, None).await.unwrap();
    let ours = timeout(Duration::from_secs(2), reader)
        .await
        .expect("not woken by Curator's writer leaving")
        .unwrap();
    ours.release().await.unwrap();

    let curators_read = create("__READ__").await;
    let shared = rw.read().try_acquire().await.unwrap();
    shared
        .expect("readers share with Curator's")
        .release()
        .await
        .unwrap();
    assert!(rw.write().try_acquire().await.unwrap().is_none());
    curator.delete(&curators_read, None).await.unwrap();
    let w = rw.write().try_acquire().await.unwrap();
    w.expect("free once Curator's reader left")
        .release()
        .await
        .unwrap();
}

/// The semaphore's size lives in its `size` node: set by the first acquirer, changed by
/// `set_permits`, kept after the last permit is released, and read back by other clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_size_outlives_its_leases() {
    let Some(h) = zookeeper().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("sem-size");
    let full = format!("conformance:{key}");
    let size_node = format!(
        "{}/size",
        h.names
            .primitive_path(LeaseKind::Permits { count: 1, limit: 1 }, &full)
    );
    a.semaphore(&key, 3)
        .acquire(1)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert_eq!(h.admin.get_data(&size_node).await.unwrap().0, b"3");
    b.semaphore(&key, 9).set_permits(5).await.unwrap();
    assert_eq!(h.admin.get_data(&size_node).await.unwrap().0, b"5");
    let state = a.semaphore(&key, 1).state().await.unwrap();
    assert_eq!((state.permits, state.held), (Some(5), 0));
    let err = a
        .semaphore(&key, 9)
        .acquire(6)
        .try_acquire()
        .await
        .unwrap_err();
    assert!(err.is_invalid_input(), "the store's size counts: {err}");
    // A size node someone corrupted is a typed error, not a panic.
    h.admin.set_data(&size_node, b"lots", None).await.unwrap();
    let err = a.semaphore(&key, 1).state().await.unwrap_err();
    assert!(matches!(err, LockError::Protocol { .. }), "{err}");
    h.admin.set_data(&size_node, b"2", None).await.unwrap();
    assert_eq!(a.semaphore(&key, 1).available_permits().await.unwrap(), 2);
}

/// A waiter of every kind whose future is dropped (a `select!`, a timeout around `.await`)
/// leaves no node in its primitive's queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waiters_of_every_kind_leave_no_node() {
    let Some(h) = zookeeper().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("dropped-kinds");
    let full = format!("conformance:{key}");
    let semaphore = LeaseKind::Permits { count: 1, limit: 1 };
    let fair = a.fair_lock(&key).await.unwrap();
    let write = a.read_write_lock(&key).write().await.unwrap();
    let permit = a.semaphore(&key, 1).acquire(1).await.unwrap();
    let wait = Duration::from_millis(150);
    assert!(timeout(wait, b.fair_lock(&key).into_future())
        .await
        .is_err());
    assert!(timeout(wait, b.read_write_lock(&key).read().into_future())
        .await
        .is_err());
    assert!(timeout(wait, b.read_write_lock(&key).write().into_future())
        .await
        .is_err());
    assert!(timeout(wait, b.semaphore(&key, 1).acquire(1).into_future())
        .await
        .is_err());
    for (kind, left) in [(LeaseKind::Fair, 1), (LeaseKind::Write, 1), (semaphore, 2)] {
        conformance::eventually("the dropped waiter's node went", || async {
            h.children_of(kind, &full).await.len() == left
        })
        .await;
        assert_eq!(a.queue_length(kind, &key).await.unwrap(), 0, "{kind:?}");
    }
    for guard in [fair, write, permit] {
        guard.release().await.unwrap();
    }
}

/// A writer that downgraded (took the read lock, then released the write lock) still reads
/// while another writer, queued behind its write node but ahead of its read node by sequence,
/// waits: the downgraded read stands right behind its writer in the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downgraded_reader_blocks_a_writer_queued_before_it() {
    let Some(h) = zookeeper().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("downgrade-queued");
    let rw = a.read_write_lock(&key);
    let w = rw.write().await.unwrap();
    let other_writer = tokio::spawn({
        let (b, key) = (b.clone(), key.clone());
        async move { b.read_write_lock(&key).write().await.unwrap() }
    });
    conformance::eventually("the other writer queued", || async {
        a.queue_length(LeaseKind::Write, &key).await.unwrap() == 1
    })
    .await;
    let r = rw.read().try_acquire().await.unwrap().expect("downgrade");
    let full = format!("conformance:{key}");
    let queue = h.children_of(LeaseKind::Read, &full).await;
    assert!(
        queue.iter().any(|c| c.contains("-beside-")),
        "the downgraded read is named after its writer: {queue:?}"
    );
    assert_eq!(a.queue_length(LeaseKind::Read, &key).await.unwrap(), 1);
    w.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !other_writer.is_finished(),
        "a writer was granted while the downgraded reader held the read lock"
    );
    assert_eq!(a.queue_length(LeaseKind::Read, &key).await.unwrap(), 1);
    // Others may read beside the downgraded reader only behind the queued writer.
    assert!(try_read(&b, &key).await.is_none());
    r.release().await.unwrap();
    let other = timeout(Duration::from_secs(2), other_writer)
        .await
        .expect("the queued writer was woken once the downgraded reader left")
        .unwrap();
    other.release().await.unwrap();
}
