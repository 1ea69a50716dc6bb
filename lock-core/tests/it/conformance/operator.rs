//! The operator's checks: inspection, listing, forced release and its audit trail, on every
//! backend that implements `OperatorBackend` (the others say so and are skipped, by name).
//!
//! After the suite's checks (which take a [`Harness`]), the checks only some stores pass (a
//! revocation pushed, waiters' labels kept, an election's next term), written once here and
//! called from each such store's test file with its clients.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use lock_core::backend::KeyInspection;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
use lock_core::backend::LeaseKind;
use lock_core::backend::{KeyStatus, Primitive, Waiters};
use lock_core::operator::LockAdmin;
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
use lock_core::HolderLabel;
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
use lock_core::LockGuard;
use lock_core::{LeaseMode, LockClient, LockError, LostReason};
use tokio::time::timeout;
#[cfg(any(
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper",
    feature = "postgres"
))]
use tokio::time::Instant;

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

/// A computation of `key` in `cache` that runs (holding its lease) until the sender is used
/// or dropped; the task ends when the value is stored.
pub(crate) fn computing(
    cache: &lock_core::cache::Cache,
    key: &str,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let (cache, key) = (cache.clone(), key.to_owned());
    let task = tokio::spawn(async move {
        cache
            .entry(key)
            .try_get_with(|| async move {
                finished.await.ok();
                Ok::<_, std::io::Error>(b"lamp".to_vec())
            })
            .await
            .unwrap();
    });
    (finish, task)
}

/// `guard` loses its lease as `Revoked` by `ops` for `drill` within 2 s of `started` (when its
/// release was asked for): pushed, its next renewal being further away.
#[cfg(any(
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper",
    feature = "postgres"
))]
pub(crate) async fn revoked_by_push(guard: &lock_core::LockGuard, started: Instant) {
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
}

/// Every key listed under `prefix`, page after page to the end (a page may come back short,
/// even empty, with a cursor: a store walks its keyspace in bounded steps).
pub(crate) async fn listed(admin: &LockAdmin, prefix: &str) -> Vec<KeyInspection> {
    let (mut keys, mut cursor, mut pages) = (Vec::new(), None, 0);
    loop {
        let page = admin.list(prefix, cursor.as_ref(), 100).await.unwrap();
        keys.extend(page.keys);
        pages += 1;
        match page.next {
            Some(next) => cursor = Some(next),
            None => return keys,
        }
        assert!(pages < 10_000, "the listing never ended");
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

/// What `who=<name>` a label says (`?` for none).
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) fn who(label: Option<&HolderLabel>) -> String {
    label.and_then(|l| l.get("who")).unwrap_or("?").to_owned()
}

/// A client on `backend` in the suites' namespace, labelled as this process plus `who=<who>`.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn labelled_on(backend: impl lock_core::LockBackend, who: &str) -> LockClient {
    LockClient::builder(backend)
        .namespace("conformance")
        .label(HolderLabel::from_process().with("who", who).unwrap())
        .build()
        .unwrap()
}

/// A forced release reaches a holder whose next renewal is 10 s away (a 30 s lease) within
/// 2 s, as `Revoked`: the store pushed it (a watch, a notification, a message), the holder did
/// not find it at a renewal. The record names the holder (owner, label), the token it took is
/// past the holder's, and the old holder's release releases nothing. `operator` releases.
#[cfg(any(
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper",
    feature = "postgres"
))]
pub(crate) async fn a_revocation_is_pushed_within_a_round_trip(
    holder: &LockClient,
    operator: &LockClient,
) {
    bounded(async {
        assert!(holder.capabilities().loss_push);
        let key = unique_key("push");
        // Renewed every 10 s: a loss seen sooner came by push.
        let guard = holder
            .lock(&key)
            .lease(LeaseMode::watchdog(Duration::from_secs(30)))
            .await
            .unwrap();
        let admin = operator.admin();
        let started = Instant::now();
        let record = admin.force_release(&key, "drill", "ops").await.unwrap();
        revoked_by_push(&guard, started).await;
        assert_eq!(record.old_owner, guard.owner_token());
        assert_eq!(record.old_label.as_ref(), Some(holder.label()));
        assert!(record.new_token > record.old_token);
        assert!(!guard.release().await.unwrap());
    })
    .await;
}

/// A lock held by `who=holder` with `who=first`, `second` and `third` queued behind it, as
/// inspected: what [`waiters_show_their_labels_in_queue_order`] leaves for a backend's own
/// checks. [`Queued::release`] ends it.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) struct Queued {
    pub(crate) holder: LockClient,
    pub(crate) guard: LockGuard,
    pub(crate) seen: KeyInspection,
    waiters: Vec<tokio::task::JoinHandle<()>>,
}

#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
impl Queued {
    /// Releases the lock; each waiter gets it in turn and releases it.
    pub(crate) async fn release(self) {
        self.guard.release().await.unwrap();
        for waiter in self.waiters {
            waiter.await.unwrap();
        }
    }
}

/// Waiters show the labels they queued with, in queue order, with the time each has waited
/// (longest first); the holder its label and fencing token. `labelled(who)` is a client on a
/// backend of its own labelled `who=<who>`; the holder takes the lock with `lease` if given.
/// Run it bounded.
#[cfg(any(feature = "redis", feature = "etcd", feature = "zookeeper"))]
pub(crate) async fn waiters_show_their_labels_in_queue_order<F, Fut>(
    labelled: F,
    lease: Option<LeaseMode>,
) -> Queued
where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = LockClient>,
{
    let holder = labelled("holder").await;
    let key = unique_key("labels");
    let mut request = holder.lock(&key);
    if let Some(lease) = lease {
        request = request.lease(lease);
    }
    let guard = request.await.unwrap();
    let admin = holder.admin();
    let mut waiters = Vec::new();
    for (n, name) in ["first", "second", "third"].into_iter().enumerate() {
        let waiter = labelled(name).await;
        let theirs = key.clone();
        waiters.push(tokio::spawn(async move {
            waiter.lock(&theirs).await.unwrap().release().await.unwrap();
        }));
        eventually("queued", || async {
            admin.inspect(&key).await.unwrap().waiters.listed().len() > n
        })
        .await;
    }
    let seen = admin.inspect(&key).await.unwrap();
    let listed = seen.waiters.listed();
    let whos: Vec<_> = listed.iter().map(|w| who(w.label.as_ref())).collect();
    assert_eq!(whos, ["first", "second", "third"]);
    let waited: Vec<_> = listed.iter().map(|w| w.waiting_for.unwrap()).collect();
    assert!(waited.windows(2).all(|w| w[0] >= w[1]), "{waited:?}");
    let [held] = seen.holders.as_slice() else {
        panic!("one holder: {seen:?}")
    };
    assert_eq!(who(held.label.as_ref()), "holder");
    assert_eq!(held.fencing_token, guard.fencing_token());
    Queued {
        holder,
        guard,
        seen,
        waiters,
    }
}

/// A forced release of an election's leader (`a`) hands leadership to the candidate queued
/// behind it (`b`; `campaigning` says when the store has it queued): the leader learns it was
/// revoked, and the next one's term is larger than the release's token. Returns the election's
/// name and the next leader's leadership, for what the backend's observers read. Run it
/// bounded.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) async fn the_next_leader_after_a_forced_release_has_a_larger_term<F, Fut>(
    a: &LockClient,
    b: &LockClient,
    campaigning: F,
) -> (String, lock_core::Leadership)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let name = unique_key("elect");
    let first = a.election(&name).participant("a").campaign().await.unwrap();
    let second = tokio::spawn({
        let (b, name) = (b.clone(), name.clone());
        async move { b.election(&name).participant("b").campaign().await.unwrap() }
    });
    eventually("b campaigns", || campaigning(name.clone())).await;
    let admin = a.admin();
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
    (name, second)
}

/// A latch counting down shows its count and time left, and its waiter where the store keeps
/// waiters; the listing under its name finds it; a forced release of it is refused (it has no
/// holder); at zero it is free and no longer listed.
pub(crate) async fn a_latch_shows_its_count_until_it_opens<H: Harness>(h: &H) {
    bounded(async {
        let client = h.client().await;
        if !client.capabilities().primitives.latch {
            eprintln!("skipped a_latch_shows_its_count_until_it_opens: no latch");
            return;
        }
        let Some(admin) = admin_of(&client, "a_latch_shows_its_count_until_it_opens").await else {
            return;
        };
        let key = unique_key("latch-view");
        let expiry = Duration::from_secs(60);
        let latch = client.latch(&key).expire_after(expiry);
        let seen = admin
            .inspect_primitive(Primitive::Latch, &key)
            .await
            .unwrap();
        assert_eq!(seen.status, KeyStatus::Free, "{seen:?}");
        assert!(latch.try_set_count(2).await.unwrap());
        let seen = admin
            .inspect_primitive(Primitive::Latch, &key)
            .await
            .unwrap();
        assert_eq!(
            (seen.primitive, seen.key.as_str(), seen.status),
            (Primitive::Latch, key.as_str(), KeyStatus::Counting),
            "{seen:?}"
        );
        assert!(seen.holders.is_empty());
        let count = seen.latch.expect("a latch counting shows its count");
        assert_eq!(count.count, 2);
        let left = count.expires_in.expect("the time left");
        assert!(left > Duration::ZERO && left <= expiry, "{left:?}");

        let waiting = h.client().await.latch(&key);
        let waiter = tokio::spawn(async move { waiting.wait().await.unwrap() });
        if let Waiters::Listed(_) = seen.waiters {
            eventually("the waiter is shown", || async {
                let seen = admin
                    .inspect_primitive(Primitive::Latch, &key)
                    .await
                    .unwrap();
                seen.waiters.listed().len() == 1
            })
            .await;
        }
        assert_eq!(latch.count_down().await.unwrap(), 1);
        let keys = listed(&admin, &key).await;
        let latches: Vec<_> = keys
            .iter()
            .filter(|k| k.primitive == Primitive::Latch)
            .map(|k| (k.key.as_str(), k.status, k.latch.map(|c| c.count)))
            .collect();
        assert_eq!(
            latches,
            [(key.as_str(), KeyStatus::Counting, Some(1))],
            "listed once, with its count: {keys:?}"
        );

        let refused = admin
            .force_release_holder(Primitive::Latch, &key, None, "stuck", "ops")
            .await
            .unwrap_err();
        assert!(
            matches!(refused, LockError::ForceReleaseRefused { .. }),
            "{refused}"
        );
        assert_eq!(latch.count_down().await.unwrap(), 0);
        waiter.await.unwrap();
        let seen = admin
            .inspect_primitive(Primitive::Latch, &key)
            .await
            .unwrap();
        assert_eq!((seen.status, seen.latch), (KeyStatus::Free, None));
        let keys = listed(&admin, &key).await;
        assert!(
            keys.iter().all(|k| k.primitive != Primitive::Latch),
            "{keys:?}"
        );
    })
    .await;
}
