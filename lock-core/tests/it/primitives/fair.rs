//! The fair lock: arrival order, no barging, exclusion, clean cancellation, crash expiry.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::backend::LeaseKind;
use tokio::time::Instant;

use super::offered;
use crate::conformance::{bounded, eventually, unique_key, Harness};

async fn fair_queue(client: &lock_core::LockClient, key: &str) -> usize {
    client.queue_length(LeaseKind::Fair, key).await.unwrap()
}

/// Waiters that queued one after another are granted in that order.
pub(crate) async fn fair_grants_in_arrival_order<H: Harness>(h: &H) {
    let Some(first) = offered(h, "fair_grants_in_arrival_order", |p| p.fair).await else {
        return;
    };
    bounded(async {
        let key = unique_key("fair-order");
        let holder = first.fair_lock(&key).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..6 {
            let client = h.client().await;
            let (task_key, order) = (key.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let guard = client.fair_lock(&task_key).await.unwrap();
                order.lock().unwrap().push(i);
                guard.release().await.unwrap();
            }));
            // The next waiter starts only once this one is in the queue.
            eventually("the waiter queued", || async {
                fair_queue(&first, &key).await == i + 1
            })
            .await;
        }
        holder.release().await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..6).collect::<Vec<_>>());
        assert_eq!(fair_queue(&first, &key).await, 0);
    })
    .await;
}

/// A newcomer does not take the lock while a waiter queues, not even in the moment after a
/// release.
pub(crate) async fn fair_never_barges<H: Harness>(h: &H) {
    let Some(a) = offered(h, "fair_never_barges", |p| p.fair).await else {
        return;
    };
    bounded(async {
        let (b, c) = (h.client().await, h.client().await);
        for round in 0..5 {
            let key = unique_key(&format!("fair-barge-{round}"));
            let holder = a.fair_lock(&key).await.unwrap();
            let waiter = tokio::spawn({
                let (b, key) = (b.clone(), key.clone());
                async move { b.fair_lock(&key).await.unwrap() }
            });
            eventually("the waiter queued", || async {
                fair_queue(&a, &key).await == 1
            })
            .await;
            holder.release().await.unwrap();
            let newcomer = c.fair_lock(&key).try_acquire().await.unwrap();
            assert!(newcomer.is_none(), "round {round}: a newcomer barged in");
            let turn = waiter.await.unwrap();
            turn.release().await.unwrap();
        }
    })
    .await;
}

/// Tasks on separate clients never overlap, and each grant's fence is larger than the last.
pub(crate) async fn fair_excludes<H: Harness>(h: &H) {
    let Some(_probe) = offered(h, "fair_excludes", |p| p.fair).await else {
        return;
    };
    bounded(async {
        let key = unique_key("fair-exclusion");
        let inside = Arc::new(AtomicUsize::new(0));
        let violations = Arc::new(AtomicUsize::new(0));
        let last_fence = Arc::new(Mutex::new(0u64));
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let client = h.client().await;
            let (key, inside, violations, last_fence) = (
                key.clone(),
                inside.clone(),
                violations.clone(),
                last_fence.clone(),
            );
            tasks.push(tokio::spawn(async move {
                for _ in 0..15 {
                    let guard = client.fair_lock(&key).await.unwrap();
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    {
                        let mut last = last_fence.lock().unwrap();
                        assert!(guard.fencing_token().get() > *last, "fence went backwards");
                        *last = guard.fencing_token().get();
                    }
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    assert!(guard.release().await.unwrap());
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            violations.load(Ordering::SeqCst),
            0,
            "fair sections overlapped"
        );
    })
    .await;
}

/// A waiter that gives up (timeout, abort) leaves the queue, and does not hold up the next.
pub(crate) async fn fair_cancelled_waiter_leaves_nothing<H: Harness>(h: &H) {
    let Some(a) = offered(h, "fair_cancelled_waiter_leaves_nothing", |p| p.fair).await else {
        return;
    };
    bounded(async {
        let key = unique_key("fair-cancel");
        let (b, c) = (h.client().await, h.client().await);
        let holder = a.fair_lock(&key).await.unwrap();
        let timed_out = b
            .fair_lock(&key)
            .acquire_within(Duration::from_millis(50))
            .await
            .unwrap();
        assert!(timed_out.is_none());
        let aborted = tokio::spawn({
            let (b, key) = (b.clone(), key.clone());
            async move { b.fair_lock(&key).await.map(|g| g.abandon()) }
        });
        eventually("the waiter queued", || async {
            fair_queue(&a, &key).await == 1
        })
        .await;
        let next = tokio::spawn({
            let (c, key) = (c.clone(), key.clone());
            async move { c.fair_lock(&key).await.unwrap() }
        });
        eventually("the second waiter queued", || async {
            fair_queue(&a, &key).await == 2
        })
        .await;
        aborted.abort();
        assert!(aborted.await.unwrap_err().is_cancelled());
        let released = Instant::now();
        holder.release().await.unwrap();
        let turn = next.await.unwrap();
        assert!(
            released.elapsed() < Duration::from_secs(3),
            "the cancelled waiter held the queue up for {:?}",
            released.elapsed()
        );
        turn.release().await.unwrap();
        eventually("the queue emptied", || async {
            fair_queue(&a, &key).await == 0
        })
        .await;
        assert_eq!(b.held_leases(), 0);
    })
    .await;
}

/// A holder that stops renewing loses the fair lock when its lease runs out; the waiter gets it.
pub(crate) async fn fair_crashed_holder_expires<H: Harness>(h: &H) {
    let Some(a) = offered(h, "fair_crashed_holder_expires", |p| p.fair).await else {
        return;
    };
    bounded(async {
        let key = unique_key("fair-crash");
        let b = h.client().await;
        let crashed = a
            .fair_lock(&key)
            .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(500)))
            .await
            .unwrap();
        let lost = crashed.lost();
        crashed.abandon();
        let started = Instant::now();
        let next = b.fair_lock(&key).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::timeout(Duration::from_secs(5), lost)
            .await
            .expect("the crashed holder's lost signal fired");
        next.release().await.unwrap();
    })
    .await;
}
