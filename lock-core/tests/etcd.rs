//! The conformance suite on a real etcd server, plus etcd-specific checks: lease revocation,
//! waiters outliving their lease TTL, fencing by create revision.
//!
//! The server comes from `LOCK_TEST_ETCD_URL` (`http://127.0.0.1:22379`; `cargo xtask test`
//! starts one and sets it). Without it the suite fails when `LOCK_TEST_REQUIRE_SERVERS=1` or
//! `CI` is set, and otherwise says loudly that it skipped.
#![cfg(feature = "etcd")]

mod conformance;

use std::time::Duration;

use conformance::{unique_key, Harness};
use etcd_client as etcd;
use lock_core::{EtcdBackend, LockClient, LockError, LostReason};
use tokio::time::{timeout, Instant};

struct Etcd {
    url: String,
    admin: etcd::Client,
    names: EtcdBackend,
}

fn server_url() -> Option<String> {
    lock_core::testing::server_url("LOCK_TEST_ETCD_URL").unwrap_or_else(|e| panic!("{e}"))
}

async fn etcd() -> Option<Etcd> {
    let url = server_url()?;
    let names = EtcdBackend::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot reach etcd at {url}: {e}"));
    let admin = names.client();
    Some(Etcd { url, admin, names })
}

impl Etcd {
    /// The lock's queue by create revision: `(key, lease id)`.
    async fn queue(&self, full_key: &str) -> Vec<(Vec<u8>, i64)> {
        let options = etcd::GetOptions::new()
            .with_prefix()
            .with_sort(etcd::SortTarget::Create, etcd::SortOrder::Ascend);
        let reply = self
            .admin
            .clone()
            .get(self.names.lock_prefix(full_key), Some(options))
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
        let backend = EtcdBackend::connect(&self.url).await.unwrap();
        LockClient::builder(backend)
            .namespace("conformance")
            .build()
            .unwrap()
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

/// An unreachable server is a typed, fail-closed error, quickly; a bad prefix is refused.
#[tokio::test]
async fn unreachable_server_is_unavailable() {
    let started = Instant::now();
    let err = EtcdBackend::builder("http://127.0.0.1:1")
        .connect_timeout(Duration::from_millis(500))
        .response_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = EtcdBackend::builder("http://127.0.0.1:1")
        .key_prefix("lock/")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::InvalidConfig(_)), "{err}");
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
        String::from_utf8_lossy(entry).ends_with(&format!("/{lease:x}")),
        "key = prefix + lease id"
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
                .lease_ttl(Duration::from_millis(500))
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
