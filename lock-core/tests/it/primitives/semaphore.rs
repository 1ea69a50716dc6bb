//! The semaphore: never more than N permits out, typed bad counts, first come first served,
//! resizing, and permits freed by a crashed holder's expiry.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::LeaseKind;

use super::offered;
use crate::conformance::{bounded, eventually, unique_key, Harness};

async fn sem_queue(client: &lock_core::LockClient, key: &str) -> usize {
    client
        .queue_length(LeaseKind::Permits { count: 1, limit: 1 }, key)
        .await
        .unwrap()
}

/// Many tasks taking 1 or 2 of 3 permits: the permits in use, counted by the resource, never
/// exceed 3, and each permit is a lease with its own token and fence.
pub(crate) async fn semaphore_never_over_grants<H: Harness>(h: &H) {
    let Some(probe) = offered(h, "semaphore_never_over_grants", |p| p.semaphore).await else {
        return;
    };
    bounded(async {
        let key = unique_key("sem-limit");
        let in_use = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let client = h.client().await;
            let (key, in_use, peak) = (key.clone(), in_use.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                let semaphore = client.semaphore(&key, 3);
                for i in 0..10 {
                    let want = 1 + (t + i) % 2;
                    let permit = semaphore.acquire(want as u32).await.unwrap();
                    let now = in_use.fetch_add(want, Ordering::SeqCst) + want;
                    peak.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    in_use.fetch_sub(want, Ordering::SeqCst);
                    assert!(permit.release().await.unwrap());
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 3, "{peak} permits were out of 3");
        let state = probe.semaphore(&key, 3).state().await.unwrap();
        assert_eq!(state.held, 0);
    })
    .await;
}

/// 0 permits, more than the size, or a size of 0 are typed input errors.
pub(crate) async fn semaphore_bad_counts_are_typed<H: Harness>(h: &H) {
    let Some(a) = offered(h, "semaphore_bad_counts_are_typed", |p| p.semaphore).await else {
        return;
    };
    bounded(async {
        let key = unique_key("sem-bad");
        let semaphore = a.semaphore(&key, 3);
        for count in [0, 4] {
            let err = semaphore.acquire(count).try_acquire().await.unwrap_err();
            assert!(err.is_invalid_input(), "{count}: {err}");
        }
        let err = a
            .semaphore(&key, 0)
            .acquire(1)
            .try_acquire()
            .await
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err}");
        assert!(semaphore
            .set_permits(0)
            .await
            .unwrap_err()
            .is_invalid_input());
        // Nothing was left behind by the refusals.
        assert_eq!(semaphore.available_permits().await.unwrap(), 3);
    })
    .await;
}

/// A request for many permits is not overtaken by a later request for few.
pub(crate) async fn semaphore_is_first_come_first_served<H: Harness>(h: &H) {
    let Some(a) = offered(h, "semaphore_is_first_come_first_served", |p| p.semaphore).await else {
        return;
    };
    bounded(async {
        let key = unique_key("sem-fifo");
        let (b, c) = (h.client().await, h.client().await);
        let one = a.semaphore(&key, 2).acquire(1).await.unwrap();
        let big = tokio::spawn({
            let (b, key) = (b.clone(), key.clone());
            async move { b.semaphore(&key, 2).acquire(2).await.unwrap() }
        });
        eventually("the big request queued", || async {
            sem_queue(&a, &key).await == 1
        })
        .await;
        assert!(
            c.semaphore(&key, 2)
                .acquire(1)
                .try_acquire()
                .await
                .unwrap()
                .is_none(),
            "a later small request overtook the queued big one"
        );
        one.release().await.unwrap();
        let both = big.await.unwrap();
        assert_eq!(c.semaphore(&key, 2).available_permits().await.unwrap(), 0);
        both.release().await.unwrap();
    })
    .await;
}

/// Growing the semaphore lets waiters in; shrinking it takes nothing back and lets nobody in
/// until the permits out are below the new size.
pub(crate) async fn semaphore_resize_without_over_granting<H: Harness>(h: &H) {
    let Some(a) = offered(h, "semaphore_resize_without_over_granting", |p| p.semaphore).await
    else {
        return;
    };
    bounded(async {
        let key = unique_key("sem-resize");
        let b = h.client().await;
        let semaphore = a.semaphore(&key, 1);
        let first = semaphore.acquire(1).await.unwrap();
        let waiter = tokio::spawn({
            let (b, key) = (b.clone(), key.clone());
            async move { b.semaphore(&key, 1).acquire(1).await.unwrap() }
        });
        eventually("the waiter queued", || async {
            sem_queue(&a, &key).await == 1
        })
        .await;
        semaphore.set_permits(2).await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("growing the semaphore let the waiter in")
            .unwrap();
        semaphore.set_permits(1).await.unwrap();
        let state = semaphore.state().await.unwrap();
        assert_eq!((state.permits, state.held), (Some(1), 2));
        assert_eq!(semaphore.available_permits().await.unwrap(), 0);
        first.release().await.unwrap();
        assert!(
            b.semaphore(&key, 1)
                .acquire(1)
                .try_acquire()
                .await
                .unwrap()
                .is_none(),
            "2 out, size 1, one released: still full"
        );
        second.release().await.unwrap();
        let third = b.semaphore(&key, 1).acquire(1).try_acquire().await.unwrap();
        third.expect("free again").release().await.unwrap();
    })
    .await;
}

/// A holder that stops renewing loses its permits when its lease runs out.
pub(crate) async fn semaphore_crashed_holder_frees_its_permits<H: Harness>(h: &H) {
    let Some(a) = offered(h, "semaphore_crashed_holder_frees_its_permits", |p| {
        p.semaphore
    })
    .await
    else {
        return;
    };
    bounded(async {
        let key = unique_key("sem-crash");
        let b = h.client().await;
        let crashed = a
            .semaphore(&key, 2)
            .acquire(2)
            .lease(lock_core::LeaseMode::watchdog(Duration::from_millis(400)))
            .await
            .unwrap();
        let token = crashed.owner_token();
        crashed.abandon();
        let permit = b
            .semaphore(&key, 2)
            .acquire(1)
            .acquire_within(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("the crashed holder's permits came back");
        assert_ne!(permit.owner_token(), token);
        permit.release().await.unwrap();
    })
    .await;
}
