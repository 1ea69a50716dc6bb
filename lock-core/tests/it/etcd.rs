//! The conformance and primitives suites on a real etcd server, plus etcd-specific checks:
//! lease revocation, waiters outliving their lease TTL, waiters sharing the session lease and
//! re-queueing when it is gone, each primitive in its own key range, and the operator's view
//! (`etcd_operator.rs`).
//!
//! The server comes from `LOCK_TEST_ETCD_URL` (`http://127.0.0.1:22379`; `cargo xtask test`
//! starts one and sets it). Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or
//! `CI` is set, and otherwise says loudly that it skipped.

use std::time::Duration;

use etcd_client as etcd;
use lock_core::backend::LeaseKind;
use lock_core::etcd::EtcdBackendBuilder;
use lock_core::{EtcdBackend, LockClient, LostReason};
use tokio::time::timeout;

use crate::conformance::{self, conformance_suite, eventually, unique_key, Harness};
use crate::primitives::primitives_suite;

pub(crate) struct Etcd {
    admin: etcd::Client,
    names: EtcdBackend,
    /// The settings of every backend the suite connects (the URL, and for the TLS server its
    /// CA, client certificate and user).
    builder: Box<dyn Fn() -> EtcdBackendBuilder + Send + Sync>,
}

fn server_url() -> Option<String> {
    lock_testing::server_url("LOCK_TEST_ETCD_URL").unwrap_or_else(|e| panic!("{e}"))
}

async fn etcd() -> Option<Etcd> {
    let url = server_url()?;
    Some(Etcd::on(move || EtcdBackend::builder(&url)).await)
}

impl Etcd {
    /// The harness on the backends `builder` makes.
    pub(crate) async fn on(
        builder: impl Fn() -> EtcdBackendBuilder + Send + Sync + 'static,
    ) -> Self {
        let names = builder()
            .connect()
            .await
            .unwrap_or_else(|e| panic!("cannot reach etcd: {e}"));
        let admin = names.client();
        Etcd {
            admin,
            names,
            builder: Box::new(builder),
        }
    }

    /// The lock's queue by create revision: `(key, lease id)`.
    async fn queue(&self, full_key: &str) -> Vec<(Vec<u8>, i64)> {
        self.queue_of(LeaseKind::Exclusive, full_key).await
    }

    /// The queue of the primitive of `kind` by create revision: `(key, lease id)`.
    async fn queue_of(&self, kind: LeaseKind, full_key: &str) -> Vec<(Vec<u8>, i64)> {
        let options = etcd::GetOptions::new()
            .with_prefix()
            .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend);
        let reply = self
            .admin
            .clone()
            .get(self.names.queue_prefix(kind, full_key), Some(options))
            .await
            .unwrap();
        reply
            .kvs()
            .iter()
            .map(|kv| (kv.key().to_vec(), kv.lease()))
            .collect()
    }
}

impl Harness for Etcd {
    async fn client(&self) -> LockClient {
        conformance::client_on((self.builder)().connect().await.unwrap())
    }

    async fn delete_behind(&self, full_key: &str) {
        let queue = self.queue(full_key).await;
        let (holder, _) = queue.first().expect("nothing to delete");
        let deleted = self
            .admin
            .clone()
            .delete(holder.clone(), None)
            .await
            .unwrap();
        assert_eq!(deleted.deleted(), 1);
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.queue(full_key).await.len().saturating_sub(1)
    }
}

conformance_suite!(etcd());
primitives_suite!(etcd());

#[path = "etcd_operator.rs"]
mod operator;

/// An unreachable server is a typed, fail-closed error, quickly; a bad prefix is refused.
#[tokio::test]
async fn unreachable_server_is_unavailable() {
    let unreachable = EtcdBackend::builder("http://127.0.0.1:1")
        .connect_timeout(Duration::from_millis(500))
        .response_timeout(Duration::from_millis(300));
    conformance::unavailable_quickly(unreachable.connect()).await;
    let bad_prefix = EtcdBackend::builder("http://127.0.0.1:1").key_prefix("lock/");
    conformance::refused_as_config(bad_prefix.connect()).await;
}

/// Revoking the holder's etcd lease fires `lost()` at once and frees the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_revoke_fires_lost() {
    let Some(h) = etcd().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("revoke");
    let guard = a.lock(&key).await.unwrap();
    let queue = h.queue(guard.key().full()).await;
    assert_eq!(queue.len(), 1);
    let (entry, lease) = &queue[0];
    assert!(
        String::from_utf8_lossy(entry).ends_with(&format!("/{}", guard.owner_token().to_hex())),
        "key = prefix + owner token"
    );
    assert_ne!(
        *lease, 0,
        "the holder's entry lives under a lease of its own"
    );
    assert!(guard.fencing_token().get() > 0);
    h.admin.clone().lease_revoke(*lease).await.unwrap();
    let reason = timeout(Duration::from_secs(1), guard.lost())
        .await
        .expect("lost() did not fire on revoke");
    assert_eq!(reason, LostReason::NotOwner);
    assert!(b.lock(&key).try_acquire().await.unwrap().is_some());
    assert!(!guard.release().await.unwrap());
}

/// A waiter keeps its own lease alive: it still holds its place after waiting several times
/// the etcd lease TTL, and gets the lock when the holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_outlives_its_lease_ttl() {
    let Some(h) = etcd().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("long-wait");
    let guard = a.lock(&key).await.unwrap();
    let waiter = tokio::spawn({
        let key = key.clone();
        async move {
            b.lock(&key)
                .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(500)))
                .await
                .unwrap()
        }
    });
    // etcd's minimum lease TTL is about 2 s; wait past it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        h.queued(guard.key().full()).await,
        1,
        "the waiter's key expired"
    );
    assert!(guard.release().await.unwrap());
    let next = timeout(Duration::from_secs(2), waiter)
        .await
        .expect("waiter not woken")
        .unwrap();
    assert!(next.release().await.unwrap());
}

/// Waiters of one backend wait under its one session lease (no lease per wait); the holder's
/// entry is under a lease of its own, and each next holder's entry moves to one when it is
/// granted, keeping its create revision (its place); its fencing token is the revision of that
/// claim, larger than every earlier holder's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_share_the_session_lease() {
    let Some(h) = etcd().await else { return };
    let h = std::sync::Arc::new(h);
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("session");
    let guard = a.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (b, key, h, full) = (b.clone(), key.clone(), h.clone(), full.clone());
            tokio::spawn(async move {
                let next = b.lock(&key).await.unwrap();
                let holder_lease = h.queue(&full).await[0].1;
                let fence = next.fencing_token();
                next.release().await.unwrap();
                (fence, holder_lease)
            })
        })
        .collect();
    eventually("three waiters queued", || async {
        h.queued(&full).await == 3
    })
    .await;
    let queue = h.queue(&full).await;
    let holder_lease = queue[0].1;
    let waiting: Vec<i64> = queue[1..].iter().map(|(_, lease)| *lease).collect();
    assert!(
        waiting.iter().all(|l| *l == waiting[0]),
        "one session lease: {waiting:?}"
    );
    assert_ne!(
        waiting[0], holder_lease,
        "the holder has a lease of its own"
    );
    let mut fences = vec![guard.fencing_token()];
    assert!(guard.release().await.unwrap());
    let mut granted = Vec::new();
    for waiter in waiters {
        let (fence, lease) = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("a waiter was not woken")
            .unwrap();
        assert_ne!(lease, waiting[0], "a holder stayed on the session lease");
        granted.push(fence);
    }
    granted.sort();
    fences.extend(granted);
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
    assert!(h.queue(&full).await.is_empty());
}

/// A waiter whose entry vanishes with its session lease (revoked here, as a lost session
/// would be) queues again and still gets the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_requeues_when_its_session_is_gone() {
    let Some(h) = etcd().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("session-lost");
    let guard = a.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    let waiter = tokio::spawn({
        let key = key.clone();
        async move { b.lock(&key).await.unwrap() }
    });
    eventually("the waiter queued", || async { h.queued(&full).await == 1 }).await;
    let session = h.queue(&full).await[1].1;
    h.admin.clone().lease_revoke(session).await.unwrap();
    // The entry went with the lease; the waiter notices and puts a new one.
    eventually("the waiter queued again", || async {
        let queue = h.queue(&full).await;
        queue.len() == 2 && queue[1].1 != session
    })
    .await;
    assert!(guard.release().await.unwrap());
    let next = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the re-queued waiter was not woken")
        .unwrap();
    assert!(next.release().await.unwrap());
}

/// A lock, a fair lock, a read-write lock and a semaphore of one name are four things, each
/// in its own key range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_primitive_has_its_own_range() {
    let Some(h) = etcd().await else { return };
    let a = h.client().await;
    let key = unique_key("kinds");
    let lock = a.lock(&key).await.unwrap();
    let fair = a
        .fair_lock(&key)
        .try_acquire()
        .await
        .unwrap()
        .expect("not the lock");
    let write = a.read_write_lock(&key).write().try_acquire().await.unwrap();
    let write = write.expect("not the lock");
    let permit = a.semaphore(&key, 1).acquire(1).try_acquire().await.unwrap();
    let permit = permit.expect("not the lock");
    let full = lock.key().full().to_owned();
    let permits = LeaseKind::Permits { count: 1, limit: 1 };
    let mut prefixes = Vec::new();
    for kind in [
        LeaseKind::Exclusive,
        LeaseKind::Fair,
        LeaseKind::Write,
        permits,
    ] {
        let queue = h.queue_of(kind, &full).await;
        let entries = queue.iter().filter(|(_, lease)| *lease != 0).count();
        assert_eq!(entries, 1, "{kind:?}: {queue:?}");
        prefixes.push(h.names.queue_prefix(kind, &full));
    }
    for (i, p) in prefixes.iter().enumerate() {
        for q in &prefixes[i + 1..] {
            assert!(
                !p.starts_with(q.as_str()) && !q.starts_with(p.as_str()),
                "{p} {q}"
            );
        }
    }
    let state = a.semaphore(&key, 1).state().await.unwrap();
    assert_eq!((state.permits, state.held), (Some(1), 1));
    for guard in [lock, fair, write, permit] {
        assert!(guard.release().await.unwrap());
    }
}

/// A lock's waiter reads only its own entry and the one just ahead of it; a key in the
/// queue's range that is no entry (written by something else) sits between the two here, and
/// must not hide the holder: the waiter reads the whole queue then, and waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_key_in_the_queue_does_not_hide_the_holder() {
    let Some(h) = etcd().await else { return };
    let (a, b) = (h.client().await, h.client().await);
    let key = unique_key("foreign");
    let guard = a.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    let foreign = format!(
        "{}written-by-another-tool",
        h.names.queue_prefix(LeaseKind::Exclusive, &full)
    );
    h.admin
        .clone()
        .put(foreign.clone(), "x", None)
        .await
        .unwrap();
    assert!(
        b.lock(&key).try_acquire().await.unwrap().is_none(),
        "a waiter took the lock past its holder"
    );
    let waiter = tokio::spawn({
        let key = key.clone();
        async move { b.lock(&key).await.unwrap() }
    });
    eventually("the waiter queued", || async { h.queued(&full).await == 2 }).await;
    assert!(
        !waiter.is_finished(),
        "a waiter took the lock past its holder"
    );
    assert!(guard.release().await.unwrap());
    let next = timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter was not woken")
        .unwrap();
    assert!(next.release().await.unwrap());
    h.admin.clone().delete(foreign, None).await.unwrap();
}
