//! The operator's view on Redis, beyond the conformance checks: waiters' labels in queue
//! order, a revocation pushed to its holder within a round trip (not at its next renewal),
//! a fair lock's holder and queue, and keys of other stores under the same prefix. The first
//! two are written once in `conformance/operator.rs`, for every store that passes them.

use std::time::Duration;

use lock_core::backend::{KeyStatus, Primitive};
use lock_core::{HolderLabel, LeaseMode, LockClient, LostReason, RedisBackend};

use crate::conformance::operator as checks;
use crate::conformance::{bounded, eventually, unique_key};
use crate::redis_support::redis_url;

async fn client(url: &str, who: &str) -> LockClient {
    LockClient::builder(RedisBackend::connect(url).await.unwrap())
        .namespace("operator")
        .label(HolderLabel::from_process().with("who", who).unwrap())
        .build()
        .unwrap()
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
