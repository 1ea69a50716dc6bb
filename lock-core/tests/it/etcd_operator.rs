//! The operator's view on etcd, beyond the conformance checks: a revocation pushed to its
//! holder by its key watch (not found at a renewal), waiters' labels in queue order with what
//! entries record, the audit record's lease, and the term an election's next leader takes
//! after a forced release.

use std::time::{Duration, Instant, SystemTime};

use etcd_client as etcd;
use lock_core::backend::{KeyStatus, LeaseKind, Primitive};
use lock_core::{HolderLabel, LeaseMode, LockClient, LostReason};
use tokio::time::timeout;

use super::Etcd;
use crate::conformance::{bounded, eventually, unique_key};

impl Etcd {
    /// A client on a backend of its own in the suites' namespace, labelled `who=<who>`.
    async fn labelled(&self, who: &str) -> LockClient {
        LockClient::builder((self.builder)().connect().await.unwrap())
            .namespace("conformance")
            .label(HolderLabel::from_process().with("who", who).unwrap())
            .build()
            .unwrap()
    }
}

fn who(label: Option<&HolderLabel>) -> String {
    label.and_then(|l| l.get("who")).unwrap_or("?").to_owned()
}

/// A forced release reaches a holder whose next renewal is 10 s away within 2 s, as
/// `Revoked`: the holder's watch on its entry fires and reads the audit record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_its_holder_by_push() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let holder = h.labelled("holder").await;
        let key = unique_key("push");
        let guard = holder
            .lock(&key)
            .lease(LeaseMode::watchdog(Duration::from_secs(30)))
            .await
            .unwrap();
        let admin = h.labelled("operator").await.admin();
        let started = Instant::now();
        let record = admin.force_release(&key, "drill", "ops").await.unwrap();
        let reason = timeout(Duration::from_secs(2), guard.lost())
            .await
            .expect("the revocation was not pushed");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(
            reason,
            LostReason::Revoked {
                operator: "ops".into(),
                reason: "drill".into()
            }
        );
        assert_eq!(who(record.old_label.as_ref()), "holder");
        assert!(record.new_token > record.old_token);
        assert!(!guard.release().await.unwrap());
    })
    .await;
}

/// Waiters show the labels their entries carry, in queue order, with the time each has
/// waited; the holder its label, time of grant and lease left (from etcd's lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_show_their_labels_in_queue_order() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let holder = h.labelled("holder").await;
        let key = unique_key("labels");
        let before = SystemTime::now() - Duration::from_secs(5);
        let guard = holder
            .lock(&key)
            .lease(LeaseMode::watchdog(Duration::from_secs(20)))
            .await
            .unwrap();
        let admin = holder.admin();
        let mut tasks = Vec::new();
        for (n, name) in ["first", "second", "third"].into_iter().enumerate() {
            let waiter = h.labelled(name).await;
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
        let waiters = seen.waiters.listed();
        let whos: Vec<_> = waiters.iter().map(|w| who(w.label.as_ref())).collect();
        assert_eq!(whos, ["first", "second", "third"]);
        let waited: Vec<_> = waiters.iter().map(|w| w.waiting_for.unwrap()).collect();
        assert!(waited.windows(2).all(|w| w[0] >= w[1]), "{waited:?}");
        assert!(waiters.iter().all(|w| w.kind == Some(LeaseKind::Exclusive)));
        let [held] = seen.holders.as_slice() else {
            panic!("one holder: {seen:?}")
        };
        assert_eq!(who(held.label.as_ref()), "holder");
        assert_eq!(held.fencing_token, guard.fencing_token());
        let at = held.acquired_at.expect("time of grant");
        assert!(at > before && at < SystemTime::now() + Duration::from_secs(5));
        let left = held
            .lease_left
            .expect("etcd keeps the lease's time to live");
        assert!(
            left > Duration::ZERO && left <= Duration::from_secs(20),
            "{left:?}"
        );
        guard.release().await.unwrap();
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
}

/// The audit record lives under an etcd lease of the retention asked for, and is found by
/// the key's name or by its prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_record_is_kept_for_its_retention() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let client = h.labelled("holder").await;
        let key = unique_key("retention");
        let guard = client.lock(&key).await.unwrap();
        let admin = client
            .admin()
            .audit_retention(Duration::from_secs(120))
            .unwrap();
        let record = admin.force_release(&key, "drill", "ops").await.unwrap();
        assert!(guard.is_lost() || timeout(Duration::from_secs(2), guard.lost()).await.is_ok());
        let options = etcd::GetOptions::new().with_prefix();
        let found = h
            .admin
            .clone()
            .get("lock/~audit/", Some(options))
            .await
            .unwrap();
        let kv = found
            .kvs()
            .iter()
            .find(|kv| {
                kv.key_str()
                    .is_ok_and(|k| k.ends_with(&guard.owner_token().to_hex()))
            })
            .expect("the record's key");
        assert_eq!(
            u64::try_from(kv.create_revision()).unwrap(),
            record.new_token.get()
        );
        let lease = h
            .admin
            .clone()
            .lease_time_to_live(kv.lease(), None)
            .await
            .unwrap();
        assert_eq!(lease.granted_ttl(), 120);
        assert_eq!(
            admin.audit(Some(&key), 10).await.unwrap().first(),
            Some(&record)
        );
        let under = admin.audit(None, 1000).await.unwrap();
        assert!(under.contains(&record), "not in the namespace's records");
    })
    .await;
}

/// A forced release of an election's leader hands leadership to the candidate queued behind
/// it, whose term is larger than the release's token, and observers read that term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_leader_after_a_forced_release_has_a_larger_term() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let (a, b) = (h.labelled("a").await, h.labelled("b").await);
        let name = unique_key("elect");
        let first = a.election(&name).participant("a").campaign().await.unwrap();
        let second = tokio::spawn({
            let (b, name) = (b.clone(), name.clone());
            async move { b.election(&name).participant("b").campaign().await.unwrap() }
        });
        let admin = a.admin();
        eventually("b campaigns", || async {
            let seen = admin
                .inspect_primitive(Primitive::Election, &name)
                .await
                .unwrap();
            seen.waiters.listed().len() == 1
        })
        .await;
        let seen = admin
            .inspect_primitive(Primitive::Election, &name)
            .await
            .unwrap();
        assert_eq!(seen.status, KeyStatus::Held);
        assert_eq!(seen.holders[0].fencing_token, first.fencing_token());
        assert_eq!(seen.holders[0].kind, LeaseKind::Leader);
        let record = admin
            .force_release_holder(Primitive::Election, &name, None, "rotate", "ops")
            .await
            .unwrap();
        assert!(matches!(
            timeout(Duration::from_secs(2), first.lost()).await,
            Ok(LostReason::Revoked { .. })
        ));
        let second = timeout(Duration::from_secs(5), second)
            .await
            .expect("b did not lead")
            .unwrap();
        assert!(second.fencing_token() > record.new_token);
        let leader = b.election(&name).leader().await.unwrap().unwrap();
        assert_eq!(leader.participant, "b");
        assert_eq!(leader.fencing_token, second.fencing_token());
        second.resign().await.unwrap();
    })
    .await;
}
