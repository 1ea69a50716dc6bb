//! The operator's view on Redis, beyond the conformance checks: waiters' labels in queue
//! order, a revocation pushed to its holder within a round trip (not at its next renewal),
//! a fair lock's holder and queue, and keys of other stores under the same prefix.

use std::time::{Duration, Instant};

use lock_core::backend::{KeyStatus, Primitive};
use lock_core::{HolderLabel, LeaseMode, LockClient, LostReason, RedisBackend};

use crate::conformance::{bounded, eventually, unique_key};
use crate::redis_support::redis_url;

async fn client(url: &str, who: &str) -> LockClient {
    LockClient::builder(RedisBackend::connect(url).await.unwrap())
        .namespace("operator")
        .label(HolderLabel::from_process().with("who", who).unwrap())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_show_their_labels_in_queue_order() {
    let Some(url) = redis_url() else { return };
    bounded(async {
        let holder = client(&url, "holder").await;
        let key = unique_key("labels");
        let guard = holder.lock(&key).await.unwrap();
        let admin = holder.admin();
        let mut tasks = Vec::new();
        for (n, who) in ["first", "second", "third"].into_iter().enumerate() {
            let waiter = client(&url, who).await;
            let theirs = key.clone();
            tasks.push(tokio::spawn(async move {
                waiter.lock(&theirs).await.unwrap().release().await.unwrap();
            }));
            eventually("queued", || async {
                admin.inspect(&key).await.unwrap().waiters.listed().len() > n
            })
            .await;
        }
        let seen = admin.inspect(&key).await.unwrap();
        let whos: Vec<_> = seen
            .waiters
            .listed()
            .iter()
            .map(|w| {
                w.label
                    .as_ref()
                    .and_then(|l| l.get("who"))
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        assert_eq!(whos, ["first", "second", "third"]);
        assert_eq!(
            seen.holders[0].label.as_ref().unwrap().get("who"),
            Some("holder")
        );
        guard.release().await.unwrap();
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_its_holder_by_push() {
    let Some(url) = redis_url() else { return };
    bounded(async {
        let holder = client(&url, "holder").await;
        let key = unique_key("push");
        // Renewed every 10 s: a loss seen sooner came by push.
        let guard = holder
            .lock(&key)
            .lease(LeaseMode::watchdog(Duration::from_secs(30)))
            .await
            .unwrap();
        let operator = client(&url, "operator").await.admin();
        let started = Instant::now();
        operator.force_release(&key, "drill", "ops").await.unwrap();
        let reason = tokio::time::timeout(Duration::from_secs(2), guard.lost())
            .await
            .expect("not pushed");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(
            reason,
            LostReason::Revoked {
                operator: "ops".into(),
                reason: "drill".into()
            }
        );
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
