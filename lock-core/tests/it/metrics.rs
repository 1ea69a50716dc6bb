//! The lock's metrics (feature `metrics`), read back from an in-memory recorder: an
//! acquisition, a busy try, a hold, a lost lease and renewals, each with its labels; a
//! breaker's availability gauge, transitions and refused calls.

use std::time::Duration;

use lock_core::breaker::{Breaker, BreakerOptions};
use lock_core::metrics::{
    ACQUIRE_TOTAL, BACKEND_AVAILABLE, BREAKER_REFUSED_TOTAL, BREAKER_TRANSITIONS_TOTAL,
    HOLD_SECONDS, LOST_TOTAL, RENEWALS_TOTAL,
};
use lock_core::{LeaseMode, LockClient, LockOwner, MemoryBackend};

use crate::metrics_support::{counter, gauge, histogram_samples, local_recorder};

#[tokio::test]
async fn the_lock_records_its_metrics() {
    let (snapshotter, _recording) = local_recorder();
    let backend = MemoryBackend::new();
    let locks = LockClient::new(backend.clone());

    let guard = locks
        .lock("m")
        .lease(LeaseMode::watchdog(Duration::from_millis(90)))
        .await
        .unwrap();
    // Another owner (the same task would re-enter).
    let other = LockOwner::new();
    assert!(locks
        .lock("m")
        .owner(&other)
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    // Renewals every 30 ms: wait (bounded) for two.
    tokio::time::timeout(Duration::from_secs(5), async {
        // A snapshot drains histograms, not counters.
        while counter(
            &snapshotter.snapshot().into_vec(),
            RENEWALS_TOTAL,
            &[("result", "ok")],
        ) < 2
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the watchdog renews");
    assert!(backend.simulate_external_delete("m"));
    guard.lost().await;
    drop(guard);

    let metrics = snapshotter.snapshot().into_vec();
    let acquired = [("backend", "memory"), ("outcome", "acquired")];
    assert_eq!(counter(&metrics, ACQUIRE_TOTAL, &acquired), 1);
    let busy = [("backend", "memory"), ("outcome", "busy")];
    assert_eq!(counter(&metrics, ACQUIRE_TOTAL, &busy), 1);
    let lost = [("backend", "memory"), ("reason", "not_owner")];
    assert_eq!(counter(&metrics, LOST_TOTAL, &lost), 1);
    assert_eq!(histogram_samples(&metrics, HOLD_SECONDS), 1);
}

#[tokio::test]
async fn a_breaker_records_its_transitions_and_refusals() {
    let (snapshotter, _recording) = local_recorder();
    let backend = [("backend", "metrics-breaker")];
    let breaker = Breaker::new("metrics-breaker", BreakerOptions::new().failures(1));
    let available = || {
        gauge(
            &snapshotter.snapshot().into_vec(),
            BACKEND_AVAILABLE,
            &backend,
        )
    };
    assert_eq!(available(), Some(1.0));
    breaker.admit().unwrap().unavailable("Connection refused");
    assert_eq!(available(), Some(0.0));
    assert!(breaker.admit().is_err());
    assert!(breaker.admit().is_err());
    let probe = tokio::time::timeout(Duration::from_secs(5), breaker.admitted())
        .await
        .expect("the probe is due after the cool-down");
    probe.answered();
    assert_eq!(available(), Some(1.0));
    let metrics = snapshotter.snapshot().into_vec();
    let entered = |state| {
        counter(
            &metrics,
            BREAKER_TRANSITIONS_TOTAL,
            &[("backend", "metrics-breaker"), ("state", state)],
        )
    };
    assert_eq!(
        (entered("open"), entered("half_open"), entered("closed")),
        (1, 1, 1)
    );
    assert_eq!(counter(&metrics, BREAKER_REFUSED_TOTAL, &backend), 2);
}
