//! The lock's metrics (feature `metrics`), read back from an in-memory recorder: an
//! acquisition, a busy try, a hold, a lost lease and renewals, each with its labels.
#![cfg(feature = "metrics")]

mod metrics_support;

use std::time::Duration;

use lock_core::metrics::{ACQUIRE_TOTAL, HOLD_SECONDS, LOST_TOTAL, RENEWALS_TOTAL};
use lock_core::{LeaseMode, LockClient, LockOwner, MemoryBackend};
use metrics_support::{counter, histogram_samples};
use metrics_util::debugging::DebuggingRecorder;

#[tokio::test]
async fn the_lock_records_its_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");
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
