//! The operator's checks: inspection, listing, forced release and its audit trail, on every
//! backend that implements `OperatorBackend` (the others say so and are skipped, by name).

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use lock_core::backend::{KeyStatus, Primitive, Waiters};
use lock_core::operator::LockAdmin;
use lock_core::{LeaseMode, LockClient, LockError, LostReason};
use tokio::time::timeout;

use super::{bounded, eventually, unique_key, Harness};

/// The admin of `client`, or `None` (printed) when its backend has no operator's view.
async fn admin_of(client: &LockClient, check: &str) -> Option<LockAdmin> {
    let admin = client.admin();
    match admin.inspect("probe").await {
        Err(LockError::Unsupported { backend, .. }) => {
            eprintln!("skipped {check}: the {backend} backend has no operator's view");
            None
        }
        Err(other) => panic!("inspect failed: {other}"),
        Ok(_) => Some(admin),
    }
}

/// A held lock shows its holder (owner, label, token, lease left, time of grant) and its
/// waiters in the order they came, longest waiting first; a free one shows free.
pub(crate) async fn inspect_shows_holder_and_waiters<H: Harness>(h: &H) {
    bounded(async {
        let holder = h.client().await;
        let Some(admin) = admin_of(&holder, "inspect_shows_holder_and_waiters").await else {
            return;
        };
        let key = unique_key("inspect");
        assert_eq!(admin.inspect(&key).await.unwrap().status, KeyStatus::Free);
        let before = SystemTime::now() - Duration::from_secs(5);
        let guard = holder.lock(&key).await.unwrap();
        let mut waiting = Vec::new();
        let mut labels = Vec::new();
        for n in 1..=3 {
            let client = h.client().await;
            labels.push(client.label().clone());
            let key = key.clone();
            waiting.push(tokio::spawn(async move {
                let guard = client.lock(&key).await.unwrap();
                guard.release().await.unwrap();
            }));
            let full = guard.key().full().to_owned();
            eventually("the waiter queued", || async { h.queued(&full).await >= n }).await;
            // Distinct arrival times, for the order.
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        let seen = admin.inspect(&key).await.unwrap();
        assert_eq!(seen.key, key, "named under the client's namespace");
        assert_eq!(seen.primitive, Primitive::Lock);
        assert_eq!(seen.status, KeyStatus::Held);
        let [view] = seen.holders.as_slice() else {
            panic!("one holder: {seen:?}");
        };
        assert_eq!(view.owner, guard.owner_token());
        assert_eq!(view.fencing_token, guard.fencing_token());
        assert_eq!(view.label.as_ref(), Some(holder.label()));
        // A session-bound lease (ZooKeeper) has none of its own to show.
        if let Some(left) = view.lease_left {
            assert!(
                left > Duration::ZERO && left <= Duration::from_secs(30),
                "{left:?}"
            );
        }
        if let Some(at) = view.acquired_at {
            assert!(at > before && at < SystemTime::now() + Duration::from_secs(5));
        }
        match &seen.waiters {
            Waiters::Listed(waiters) => {
                assert_eq!(waiters.len(), 3, "{waiters:?}");
                let waited: Vec<_> = waiters.iter().filter_map(|w| w.waiting_for).collect();
                assert!(
                    waited.windows(2).all(|w| w[0] >= w[1]),
                    "not in arrival order: {waited:?}"
                );
                // Where the store keeps waiters' labels, they say who waits, in order.
                for (waiter, label) in waiters.iter().zip(&labels) {
                    if let Some(seen) = &waiter.label {
                        assert_eq!(seen, label, "waiters out of order: {waiters:?}");
                    }
                }
            }
            Waiters::NotKept => {}
            other => panic!("{other:?}"),
        }
        guard.release().await.unwrap();
        for task in waiting {
            task.await.unwrap();
        }
        eventually("free again", || async {
            admin.inspect(&key).await.unwrap().status == KeyStatus::Free
        })
        .await;
    })
    .await;
}

/// A forced release takes the lock from its holder: its `lost()` fires as revoked, the token
/// the release took is larger than the holder's and the next grant's larger still, the waiter
/// gets the lock, and the audit trail says who did it and why.
pub(crate) async fn force_release_revokes_and_hands_over<H: Harness>(h: &H) {
    bounded(async {
        let (a, b) = (h.client().await, h.client().await);
        let Some(admin) = admin_of(&a, "force_release_revokes_and_hands_over").await else {
            return;
        };
        let key = unique_key("force");
        // A short lease: a backend that cannot push finds out at its next renewal (a third).
        let lease = LeaseMode::watchdog(Duration::from_millis(900));
        let stuck = a.lock(&key).lease(lease).await.unwrap();
        let waiter = tokio::spawn({
            let key = key.clone();
            async move { b.lock(&key).await.unwrap() }
        });
        let full = stuck.key().full().to_owned();
        eventually("the waiter queued", || async { h.queued(&full).await >= 1 }).await;
        let record = admin
            .force_release(&key, "stuck <since> the \"deploy\"", "alice@ops")
            .await
            .unwrap();
        assert_eq!(record.key, key);
        assert_eq!(record.old_owner, stuck.owner_token());
        assert_eq!(record.old_token, stuck.fencing_token());
        assert!(record.new_token > record.old_token);
        assert_eq!(record.operator, "alice@ops");
        let reason = timeout(Duration::from_secs(5), stuck.lost())
            .await
            .expect("the holder never learned");
        assert_eq!(
            reason,
            LostReason::Revoked {
                operator: "alice@ops".into(),
                reason: "stuck <since> the \"deploy\"".into()
            }
        );
        let next = timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter was not handed the lock")
            .unwrap();
        assert!(next.fencing_token() > record.new_token);
        // A fenced resource that saw the new holder refuses the old one.
        let newest = next.fencing_token();
        assert!(stuck.fencing_token() < newest);
        let trail = admin.audit(Some(&key), 10).await.unwrap();
        assert_eq!(trail.first(), Some(&record), "{trail:?}");
        let all = admin.audit(None, 1000).await.unwrap();
        assert!(all.iter().any(|r| r == &record));
        assert!(
            !stuck.release().await.unwrap(),
            "the old holder released the new one's lock"
        );
        assert!(next.release().await.unwrap());
    })
    .await;
}

/// A forced release of a free key, or of a holder that does not hold it, is refused and
/// leaves no record; a reason or operator that is empty, too long or holds control
/// characters is invalid input.
pub(crate) async fn force_release_refuses_what_is_not_held<H: Harness>(h: &H) {
    bounded(async {
        let client = h.client().await;
        let Some(admin) = admin_of(&client, "force_release_refuses_what_is_not_held").await
        else {
            return;
        };
        let key = unique_key("refused");
        let refused = admin.force_release(&key, "why", "ops").await.unwrap_err();
        assert!(
            matches!(refused, LockError::ForceReleaseRefused { ref reason, .. } if reason.contains("free")),
            "{refused}"
        );
        let guard = client.lock(&key).await.unwrap();
        let stranger = lock_core::OwnerToken::random().unwrap();
        let refused = admin
            .force_release_holder(Primitive::Lock, &key, Some(stranger), "why", "ops")
            .await
            .unwrap_err();
        assert!(matches!(refused, LockError::ForceReleaseRefused { .. }), "{refused}");
        for bad in ["", "two\nlines", &"x".repeat(201)] {
            let err = admin.force_release(&key, bad, "ops").await.unwrap_err();
            assert!(err.is_invalid_input(), "{err}");
            let err = admin.force_release(&key, "why", bad).await.unwrap_err();
            assert!(err.is_invalid_input(), "{err}");
        }
        assert!(admin.audit(Some(&key), 10).await.unwrap().is_empty());
        assert!(!guard.is_lost());
        assert!(guard.release().await.unwrap());
    })
    .await;
}

/// Listing gives every key held under a prefix, a bounded page at a time, and none outside it.
pub(crate) async fn listing_pages_through_held_keys<H: Harness>(h: &H) {
    bounded(async {
        let client = h.client().await;
        let Some(admin) = admin_of(&client, "listing_pages_through_held_keys").await else {
            return;
        };
        let prefix = format!("{}:", unique_key("list"));
        let mut guards = Vec::new();
        let mut want = BTreeSet::new();
        for n in 0..5 {
            let key = format!("{prefix}{n}");
            guards.push(client.lock(&key).await.unwrap());
            want.insert(key);
        }
        let outside = client.lock(unique_key("elsewhere")).await.unwrap();
        let (mut got, mut cursor, mut pages) = (BTreeSet::new(), None, 0);
        loop {
            let page = admin.list(&prefix, cursor.as_ref(), 2).await.unwrap();
            pages += 1;
            assert!(page.keys.len() <= 2, "a page held {}", page.keys.len());
            for seen in page.keys {
                assert_eq!(seen.status, KeyStatus::Held);
                assert!(seen.key.starts_with(&prefix), "{}", seen.key);
                got.insert(seen.key);
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
            assert!(pages < 10_000, "the listing never ended");
        }
        assert_eq!(got, want);
        assert!(pages >= 3, "5 keys in pages of 2 took {pages} pages");
        assert!(admin
            .list("", None, 0)
            .await
            .unwrap_err()
            .is_invalid_input());
        drop(outside);
        for guard in guards {
            guard.release().await.unwrap();
        }
    })
    .await;
}

/// A forced release of one holder of a semaphore touches only that holder; with several
/// holders and none named, it is refused.
pub(crate) async fn force_release_of_one_holder_touches_only_it<H: Harness>(h: &H) {
    bounded(async {
        let client = h.client().await;
        if !client.capabilities().primitives.semaphore {
            eprintln!("skipped force_release_of_one_holder_touches_only_it: no semaphore");
            return;
        }
        let Some(admin) = admin_of(&client, "force_release_of_one_holder_touches_only_it").await
        else {
            return;
        };
        let key = unique_key("force-sem");
        let semaphore = client.semaphore(&key, 3);
        let lease = LeaseMode::watchdog(Duration::from_millis(900));
        let first = semaphore.acquire(1).lease(lease).await.unwrap();
        let second = semaphore.acquire(1).lease(lease).await.unwrap();
        let seen = admin
            .inspect_primitive(Primitive::Semaphore, &key)
            .await
            .unwrap();
        assert_eq!(seen.holders.len(), 2, "{seen:?}");
        assert_eq!(seen.permits.map(|p| p.in_use), Some(2));
        let refused = admin
            .force_release_holder(Primitive::Semaphore, &key, None, "why", "ops")
            .await
            .unwrap_err();
        assert!(
            matches!(refused, LockError::ForceReleaseRefused { .. }),
            "{refused}"
        );
        let record = admin
            .force_release_holder(
                Primitive::Semaphore,
                &key,
                Some(first.owner_token()),
                "runaway job",
                "ops",
            )
            .await
            .unwrap();
        assert_eq!(record.old_owner, first.owner_token());
        assert!(matches!(
            timeout(Duration::from_secs(5), first.lost())
                .await
                .expect("never learned"),
            LostReason::Revoked { .. }
        ));
        let seen = admin
            .inspect_primitive(Primitive::Semaphore, &key)
            .await
            .unwrap();
        assert_eq!(seen.holders.len(), 1, "{seen:?}");
        assert_eq!(seen.holders[0].owner, second.owner_token());
        assert!(!second.is_lost());
        assert!(second.release().await.unwrap());
    })
    .await;
}
