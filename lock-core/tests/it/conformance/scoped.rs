//! The checks of a client's scoped holds and of its graceful stop: `with_lock` releases on
//! every path and cancels its body when the lease is lost; `shutdown` gives every lease back
//! at once, fires each holder's `lost()` first and refuses later acquisitions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::LeaseKind;
use lock_core::{LockError, LostReason};
use tokio::time::Instant;

use super::{bounded, unique_key, Harness};

/// `with_lock` answers the body's output and frees the key; a lease deleted while the body
/// runs ends it with `LeaseLost`, the body cancelled at its next `.await`.
pub(crate) async fn with_lock_releases_on_every_path<H: Harness>(h: &H) {
    bounded(async {
        let key = unique_key("with-lock");
        let (a, b) = (h.client().await, h.client().await);
        let fence = a
            .with_lock(&key, async |guard| guard.fencing_token())
            .await
            .unwrap();
        let next = b.lock(&key).try_acquire().await.unwrap().expect("released");
        assert!(next.fencing_token() > fence);
        next.release().await.unwrap();

        let ttl = Duration::from_millis(600);
        let went_on = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let lost = a
            .lock(&key)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .with_lock(async |guard| {
                h.delete_behind(guard.key().full()).await;
                std::future::pending::<()>().await;
                went_on.store(true, Ordering::SeqCst);
            })
            .await
            .unwrap_err();
        assert!(
            matches!(
                &lost,
                LockError::LeaseLost {
                    reason: LostReason::NotOwner,
                    ..
                }
            ),
            "{lost}"
        );
        assert!(started.elapsed() < ttl * 3, "{:?}", started.elapsed());
        assert!(!went_on.load(Ordering::SeqCst));
        let after = b.lock(&key).try_acquire().await.unwrap();
        assert!(
            after.is_some(),
            "the key stayed taken after a lost scoped hold"
        );
    })
    .await;
}

/// `shutdown` releases every lease of the client (a re-entered lock once, a permit where the
/// backend has semaphores), fires their `lost()` with `ShutDown`, hands a waiter the lock
/// without waiting for the lease, and refuses acquisitions afterwards; the guards' own
/// releases then release nothing.
pub(crate) async fn shutdown_releases_every_lease<H: Harness>(h: &H) {
    bounded(async {
        let (k1, k2) = (unique_key("shutdown-1"), unique_key("shutdown-2"));
        let (a, b) = (h.client().await, h.client().await);
        let ttl = Duration::from_secs(20);
        let outer = a
            .lock(&k1)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        let inner = a
            .lock(&k1)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        assert_eq!(inner.hold_count(), 2);
        let other = a
            .lock(&k2)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        let permits = a
            .capabilities()
            .primitives
            .offers(LeaseKind::Permits { count: 1, limit: 1 });
        let permit = if permits {
            let semaphore = a.semaphore(unique_key("shutdown-sem"), 1);
            Some((
                semaphore
                    .acquire(1)
                    .lease(lock_core::LeaseMode::watchdog(ttl))
                    .await
                    .unwrap(),
                semaphore,
            ))
        } else {
            None
        };
        let waiter = tokio::spawn({
            let (b, k1) = (b.clone(), k1.clone());
            async move { b.lock(&k1).acquire_within(Duration::from_secs(15)).await }
        });

        let stopped_at = Instant::now();
        let report = a.shutdown().await;
        let expected = 2 + usize::from(permit.is_some());
        assert_eq!(
            (report.released, report.already_gone, report.failed),
            (expected, 0, 0),
            "{report:?}"
        );
        for guard in [&outer, &inner, &other] {
            assert_eq!(guard.lost().await, LostReason::ShutDown);
            assert!(guard.is_lost());
        }
        let next = waiter
            .await
            .unwrap()
            .unwrap()
            .expect("the waiter never got it");
        // Far sooner than the 20 s lease: the lock was handed on, not left to expire.
        assert!(stopped_at.elapsed() < Duration::from_secs(10));
        if let Some((permit, semaphore)) = &permit {
            assert_eq!(permit.lost().await, LostReason::ShutDown);
            let again = b
                .semaphore(semaphore.name(), 1)
                .acquire(1)
                .try_acquire()
                .await;
            assert!(again.unwrap().is_some(), "the permit was not released");
        }

        for refused in [
            a.lock(&k1).try_acquire().await.unwrap_err(),
            a.lock(unique_key("after-shutdown"))
                .try_acquire()
                .await
                .unwrap_err(),
        ] {
            assert!(
                refused.is_shut_down() && refused.is_unavailable(),
                "{refused}"
            );
        }
        // The guards' releases do nothing now: the waiter keeps what it was handed.
        assert!(!inner.release().await.unwrap());
        assert!(!outer.release().await.unwrap());
        drop(other);
        drop(permit);
        assert!(!next.is_lost());
        assert_eq!(a.shutdown().await.released, 0);
        assert!(
            next.release().await.unwrap(),
            "the waiter's lease was touched"
        );
    })
    .await;
}
