//! The operator's view on etcd, beyond the conformance checks: a revocation pushed to its
//! holder by its key watch (not found at a renewal), waiters' labels in queue order with what
//! entries record, the audit record's lease, and the term an election's next leader takes
//! after a forced release. What other stores check too is written once in
//! `conformance/operator.rs`; this file adds what etcd shows beyond it.

use std::time::{Duration, SystemTime};

use etcd_client as etcd;
use lock_core::backend::{LeaseKind, Primitive};
use lock_core::{LeaseMode, LockClient};
use tokio::time::timeout;

use super::Etcd;
use crate::conformance::operator::{self as checks, labelled_on};
use crate::conformance::{bounded, unique_key};

impl Etcd {
    /// A client on a backend of its own in the suites' namespace, labelled `who=<who>`.
    async fn labelled(&self, who: &str) -> LockClient {
        labelled_on((self.builder)().connect().await.unwrap(), who)
    }
}

/// A forced release reaches a holder whose next renewal is 10 s away within 2 s, as
/// `Revoked`: the holder's watch on its entry fires and reads the audit record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_its_holder_by_push() {
    let Some(h) = super::etcd().await else { return };
    let (holder, operator) = (h.labelled("holder").await, h.labelled("operator").await);
    checks::a_revocation_is_pushed_within_a_round_trip(&holder, &operator).await;
}

/// Waiters show the labels their entries carry, in queue order, with the time each has
/// waited and the kind it asks for; the holder its label, time of grant and lease left (from
/// etcd's lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_show_their_labels_in_queue_order() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let before = SystemTime::now() - Duration::from_secs(5);
        let lease = LeaseMode::watchdog(Duration::from_secs(20));
        let queued =
            checks::waiters_show_their_labels_in_queue_order(|who| h.labelled(who), Some(lease))
                .await;
        let waiters = queued.seen.waiters.listed();
        assert!(waiters.iter().all(|w| w.kind == Some(LeaseKind::Exclusive)));
        let held = &queued.seen.holders[0];
        let at = held.acquired_at.expect("time of grant");
        assert!(at > before && at < SystemTime::now() + Duration::from_secs(5));
        let left = held
            .lease_left
            .expect("etcd keeps the lease's time to live");
        assert!(
            left > Duration::ZERO && left <= Duration::from_secs(20),
            "{left:?}"
        );
        queued.release().await;
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
/// it, whose term is larger than the release's token, and observers read that term at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_leader_after_a_forced_release_has_a_larger_term() {
    let Some(h) = super::etcd().await else { return };
    bounded(async {
        let (a, b) = (h.labelled("a").await, h.labelled("b").await);
        let admin = &a.admin();
        let (name, second) = checks::the_next_leader_after_a_forced_release_has_a_larger_term(
            &a,
            &b,
            |name| async move {
                let seen = admin
                    .inspect_primitive(Primitive::Election, &name)
                    .await
                    .unwrap();
                seen.waiters.listed().len() == 1
            },
        )
        .await;
        let leader = b.election(&name).leader().await.unwrap().unwrap();
        assert_eq!(leader.participant, "b");
        assert_eq!(leader.fencing_token, second.fencing_token());
        second.resign().await.unwrap();
    })
    .await;
}
