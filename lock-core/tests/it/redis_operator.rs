//! The operator's view on Redis, beyond the conformance checks: waiters' labels in queue
//! order, a revocation pushed to its holder within a round trip (not at its next renewal; on
//! one server and on the stack's Redis Cluster), a fair lock's holder and queue, and keys of
//! other stores under the same prefix. The first two are written once in
//! `conformance/operator.rs`, for every store that passes them.

use std::time::Duration;

use lock_core::backend::{KeyStatus, Primitive};
use lock_core::{HolderLabel, LeaseMode, LockClient, LostReason, RedisBackend};
use tokio::time::Instant;

use crate::conformance::operator as checks;
use crate::conformance::{bounded, eventually, unique_key};
use crate::redis_support::{redis_url, Deployment};

async fn client(url: &str, who: &str) -> LockClient {
    labelled(RedisBackend::connect(url).await.unwrap(), who)
}

/// A client on `backend` labelled as this process plus `who=<who>`.
fn labelled(backend: RedisBackend, who: &str) -> LockClient {
    LockClient::builder(backend)
        .namespace("operator")
        .label(HolderLabel::from_process().with("who", who).unwrap())
        .build()
        .unwrap()
}

/// A labelled client on a backend of its own on the stack's Redis Cluster.
async fn cluster_client(deployment: &Deployment, who: &str) -> LockClient {
    labelled(deployment.backend().await, who)
}

/// Waiters carry their label in their queue id: in queue order, with the time each has waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_show_their_labels_in_queue_order() {
    let Some(url) = redis_url() else { return };
    bounded(async {
        let queued =
            checks::waiters_show_their_labels_in_queue_order(|who| client(&url, who), None).await;
        queued.release().await;
    })
    .await;
}

/// A forced release reaches the holder within a round trip (its pub/sub message), not at its
/// next renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_its_holder_by_push() {
    let Some(url) = redis_url() else { return };
    let (holder, operator) = (client(&url, "holder").await, client(&url, "operator").await);
    checks::a_revocation_is_pushed_within_a_round_trip(&holder, &operator).await;
}

/// On a Redis Cluster too, a forced release reaches a holder that does not wait on the key
/// (so hears none of the key's sharded wake channels) within a round trip: on its backend's
/// revocation channel, not at its next renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_revocation_reaches_its_holder_by_push() {
    let Some(deployment) = Deployment::cluster() else {
        return;
    };
    let holder = cluster_client(&deployment, "holder").await;
    let operator = cluster_client(&deployment, "operator").await;
    checks::a_revocation_is_pushed_within_a_round_trip(&holder, &operator).await;
}

/// On a Redis Cluster, one permit holder of a semaphore and one reader of a read-write lock,
/// each released by force (named, beside another holder), learn it within a round trip (their
/// renewal is 10 s away) as `Revoked`, and the other holder keeps its lease (of the same
/// backend for the semaphore, of another for the read-write lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_primitives_revoked_holder_learns_by_push() {
    let Some(deployment) = Deployment::cluster() else {
        return;
    };
    bounded(async {
        let holder = cluster_client(&deployment, "holder").await;
        let operator = cluster_client(&deployment, "operator").await;
        let admin = operator.admin();
        // Renewed every 10 s: a loss seen sooner came by push.
        let lease = LeaseMode::watchdog(Duration::from_secs(30));

        let key = unique_key("push-sem");
        let semaphore = holder.semaphore(&key, 3);
        let revoked = semaphore.acquire(1).lease(lease).await.unwrap();
        let kept = semaphore.acquire(1).lease(lease).await.unwrap();
        let started = Instant::now();
        let record = admin
            .force_release_holder(
                Primitive::Semaphore,
                &key,
                Some(revoked.owner_token()),
                "drill",
                "ops",
            )
            .await
            .unwrap();
        assert_eq!(record.old_owner, revoked.owner_token());
        checks::revoked_by_push(&revoked, started).await;
        assert!(!kept.is_lost());
        assert!(kept.release().await.unwrap());

        let key = unique_key("push-rw");
        let revoked = holder
            .read_write_lock(&key)
            .read()
            .lease(lease)
            .await
            .unwrap();
        // On another client: a second read of the same task would re-enter the first's lease.
        let kept = operator
            .read_write_lock(&key)
            .read()
            .lease(lease)
            .await
            .unwrap();
        assert_ne!(kept.owner_token(), revoked.owner_token());
        let started = Instant::now();
        admin
            .force_release_holder(
                Primitive::ReadWrite,
                &key,
                Some(revoked.owner_token()),
                "drill",
                "ops",
            )
            .await
            .unwrap();
        checks::revoked_by_push(&revoked, started).await;
        assert!(!kept.is_lost());
        assert!(kept.release().await.unwrap());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_lock_shows_its_holder_and_queue_and_is_handed_on_when_revoked() {
    let Some(url) = redis_url() else { return };
    bounded(async {
        let holder = client(&url, "holder").await;
        let key = unique_key("fair");
        let turn = holder
            .fair_lock(&key)
            .lease(LeaseMode::watchdog(Duration::from_millis(900)))
            .await
            .unwrap();
        let next = client(&url, "next").await;
        let waiter = tokio::spawn({
            let key = key.clone();
            async move { next.fair_lock(&key).await.unwrap() }
        });
        let admin = holder.admin();
        eventually("queued", || async {
            let seen = admin
                .inspect_primitive(Primitive::Fair, &key)
                .await
                .unwrap();
            !seen.waiters.listed().is_empty()
        })
        .await;
        let seen = admin
            .inspect_primitive(Primitive::Fair, &key)
            .await
            .unwrap();
        assert_eq!(seen.status, KeyStatus::Held);
        assert_eq!(seen.holders[0].owner, turn.owner_token());
        assert_eq!(
            seen.waiters.listed()[0]
                .label
                .as_ref()
                .and_then(|l| l.get("who")),
            Some("next")
        );
        let record = admin
            .force_release_holder(Primitive::Fair, &key, None, "drill", "ops")
            .await
            .unwrap();
        let handed = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("not handed on")
            .unwrap();
        assert!(handed.fencing_token() > record.new_token);
        assert!(matches!(turn.lost().await, LostReason::Revoked { .. }));
        handed.release().await.unwrap();
    })
    .await;
}

/// An idempotent request in flight (its claim taken in the same script as its record) shows
/// the label of the instance running it, and a forced release of its claim reaches that
/// instance by push, as a lock's does; a cache computation in flight shows its instance too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_computations_in_flight_show_their_instance() {
    use lock_core::cache::Cache;
    use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
    use lock_core::redis::RedisResultStore;

    let Some(url) = redis_url() else { return };
    bounded(async {
        let backend = RedisBackend::connect(&url).await.unwrap();
        let store = RedisResultStore::from_backend(&backend).await.unwrap();
        let label = HolderLabel::from_process()
            .with("who", "payments-3")
            .unwrap();
        let payments = Idempotency::builder(store.clone(), backend.clone())
            .namespace("operator-view")
            .label(label.clone())
            .build()
            .unwrap();
        let key = unique_key("request");
        let fingerprint = Fingerprint::builder("POST", "/payments")
            .body(b"100")
            .finish();
        let Begin::Run(claim) = payments
            .begin("alice", &key, fingerprint, InFlight::Conflict)
            .await
            .unwrap()
        else {
            panic!("the first request runs");
        };
        let admin = payments.admin();
        let name = format!("5:alice:{key}");
        let seen = admin.inspect(&name).await.unwrap();
        assert_eq!(seen.status, KeyStatus::Held, "{seen:?}");
        assert_eq!(seen.holders[0].label.as_ref(), Some(&label), "{seen:?}");
        let keys = checks::listed(&admin, &name).await;
        assert_eq!(
            keys.iter().filter(|k| k.key == name).count(),
            1,
            "listed once: {keys:?}"
        );
        let record = admin.force_release(&name, "stuck", "ops").await.unwrap();
        assert_eq!(record.old_label.as_ref(), Some(&label));
        let reason = tokio::time::timeout(Duration::from_secs(2), claim.lost())
            .await
            .expect("the revocation was not pushed");
        assert!(matches!(reason, LostReason::Revoked { .. }), "{reason:?}");

        let products = Cache::builder(store, backend)
            .namespace("operator-view")
            .label(label.clone())
            .build()
            .unwrap();
        let entry = unique_key("product");
        let (finish, computation) = checks::computing(&products, &entry);
        let admin = products.admin();
        eventually("the computation is shown", || async {
            let seen = admin.inspect(&entry).await.unwrap();
            seen.holders.first().and_then(|h| h.label.as_ref()) == Some(&label)
        })
        .await;
        finish.send(()).unwrap();
        computation.await.unwrap();
        // The lease is given back once the value is stored (in the background).
        eventually("free once computed", || async {
            admin.inspect(&entry).await.unwrap().status == KeyStatus::Free
        })
        .await;
    })
    .await;
}
