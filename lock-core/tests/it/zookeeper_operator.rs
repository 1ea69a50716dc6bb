//! The operator's view on ZooKeeper, beyond the conformance checks: a revocation pushed to its
//! holder by its node watch (not found at a renewal), waiters' labels in queue order, a
//! Curator client still locking against our labelled nodes (and released by force), and the
//! fresh fencing token an election's next leader takes after a forced release. What other
//! stores check too is written once in `conformance/operator.rs`; this file adds what
//! ZooKeeper shows beyond it.

use std::time::Duration;

use lock_core::backend::{KeyStatus, LeaseKind};
use lock_core::{LockClient, OwnerToken};
use tokio::time::timeout;
use zookeeper_client as zk;

use super::{zookeeper, ZooKeeper};
use crate::conformance::operator::{self as checks, labelled_on, who};
use crate::conformance::{bounded, eventually, unique_key, Harness};

impl ZooKeeper {
    /// A client of its own session in the suites' namespace, labelled `who=<who>`.
    async fn labelled(&self, who: &str) -> LockClient {
        labelled_on((self.builder)().connect().await.unwrap(), who)
    }
}

/// A forced release reaches a holder whose next renewal is 10 s away within 2 s, as
/// `Revoked`: the holder's watch on its node fires and reads the audit record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_its_holder_by_push() {
    let Some(h) = zookeeper().await else { return };
    let (holder, operator) = (h.labelled("holder").await, h.labelled("operator").await);
    checks::a_revocation_is_pushed_within_a_round_trip(&holder, &operator).await;
}

/// Waiters show the labels their nodes carry, in queue order, with the time each has waited;
/// the labels are in the node data, as text kazoo (which reads contenders' data) can decode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_show_their_labels_in_queue_order() {
    let Some(h) = zookeeper().await else { return };
    bounded(async {
        let queued =
            checks::waiters_show_their_labels_in_queue_order(|who| h.labelled(who), None).await;
        let held = &queued.seen.holders[0];
        assert_eq!(held.lease_left, None, "ZooKeeper keeps no lease time");
        let full = queued.guard.key().full().to_owned();
        let queue = h.queue(&full).await;
        let (data, _) = h
            .admin
            .get_data(&format!("{}/{}", h.names.lock_path(&full), queue[0]))
            .await
            .unwrap();
        let text = String::from_utf8(data).expect("node data is text");
        assert_eq!(text, format!("label {}", queued.holder.label().as_stored()));
        queued.release().await;
    })
    .await;
}

/// Curator's `InterProcessMutex`, step by step on its own session: a protected ephemeral
/// sequential node holding the client's address, the children sorted by the text after
/// `lock-`, the lowest holding, any other reading the data of the node just ahead with a watch
/// and waiting for its deletion. Returns the node's path once it holds.
async fn curator_acquire(curator: &zk::Client, dir: &str, uuid: &str) -> String {
    let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let (_, sequence) = curator
        .create(&format!("{dir}/_c_{uuid}-lock-"), b"10.0.0.7", &options)
        .await
        .unwrap();
    let ours = format!("_c_{uuid}-lock-{sequence}");
    loop {
        let mut children = curator.list_children(dir).await.unwrap();
        children.sort_by_key(|c| c.rsplit("lock-").next().unwrap_or_default().to_owned());
        let at = children.iter().position(|c| *c == ours).expect("our node");
        if at == 0 {
            return format!("{dir}/{ours}");
        }
        let ahead = format!("{dir}/{}", children[at - 1]);
        match curator.get_and_watch_data(&ahead).await {
            Ok((data, _, watcher)) => {
                // Curator reads the data only to set the watch; ours must still be readable.
                assert!(String::from_utf8(data).is_ok());
                watcher.changed().await;
            }
            Err(zk::Error::NoNode) => {}
            Err(e) => panic!("watching {ahead}: {e}"),
        }
    }
}

/// A Curator client still locks against our labelled nodes, both ways: it waits for our
/// holder and gets the lock at our release; while it holds, ours waits. The operator sees its
/// node (no label: its data is an address) and can release it by force; our waiter then holds
/// with a token larger than the release's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_interoperates_with_labelled_nodes_and_can_be_released_by_force() {
    let Some(h) = zookeeper().await else { return };
    bounded(async {
        let ours = h.labelled("rust").await;
        let key = unique_key("curator-label");
        let full = format!("conformance:{key}");
        let dir = h.names.lock_path(&full);
        let uuid = "9b2f3c4e-0000-4000-8000-00000000c0de";
        let curator = zk::Client::connect(&h.url).await.unwrap();

        let guard = ours.lock(&key).await.unwrap();
        let contender = tokio::spawn({
            let (curator, dir) = (curator.clone(), dir.clone());
            async move { curator_acquire(&curator, &dir, uuid).await }
        });
        let admin = ours.admin();
        eventually("Curator queued", || async {
            admin.inspect(&key).await.unwrap().waiters.listed().len() == 1
        })
        .await;
        let seen = admin.inspect(&key).await.unwrap();
        assert_eq!(who(seen.holders[0].label.as_ref()), "rust");
        assert_eq!(seen.waiters.listed()[0].label, None);
        guard.release().await.unwrap();
        let curators = timeout(Duration::from_secs(5), contender)
            .await
            .expect("Curator was not woken by our release")
            .unwrap();

        assert!(ours.lock(&key).try_acquire().await.unwrap().is_none());
        let waiter = tokio::spawn({
            let (ours, key) = (ours.clone(), key.clone());
            async move { ours.lock(&key).await.unwrap() }
        });
        eventually("ours queued behind Curator", || async {
            h.queued(&full).await == 1
        })
        .await;
        let seen = admin.inspect(&key).await.unwrap();
        assert_eq!(seen.status, KeyStatus::Held);
        let curator_owner = OwnerToken::from_hex(&uuid.replace('-', "")).unwrap();
        assert_eq!(seen.holders[0].owner, curator_owner);
        assert_eq!(seen.holders[0].label, None);
        assert_eq!(who(seen.waiters.listed()[0].label.as_ref()), "rust");
        let record = admin
            .force_release(&key, "stuck Java job", "ops")
            .await
            .unwrap();
        assert_eq!(record.old_owner, curator_owner);
        let next = timeout(Duration::from_secs(5), waiter)
            .await
            .expect("ours was not handed the lock")
            .unwrap();
        assert!(next.fencing_token() > record.new_token);
        assert_eq!(curator.check_stat(&curators).await.unwrap(), None);
        next.release().await.unwrap();
    })
    .await;
}

/// A forced release of an election's leader hands leadership to the candidate queued behind
/// it, whose term is larger than the release's token, and observers read that term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_leader_after_a_forced_release_has_a_larger_term() {
    let Some(h) = zookeeper().await else { return };
    bounded(async {
        let (a, b) = (h.labelled("a").await, h.labelled("b").await);
        let h = &h;
        let (name, second) = checks::the_next_leader_after_a_forced_release_has_a_larger_term(
            &a,
            &b,
            |name| async move {
                let full = format!("conformance:{name}");
                let dir = h.names.primitive_path(LeaseKind::Leader, &full);
                h.admin.list_children(&dir).await.unwrap().len() == 2
            },
        )
        .await;
        let election = b.election(&name);
        eventually("observers read the new term", || async {
            election
                .leader()
                .await
                .unwrap()
                .is_some_and(|l| l.participant == "b" && l.fencing_token == second.fencing_token())
        })
        .await;
        second.resign().await.unwrap();
    })
    .await;
}
