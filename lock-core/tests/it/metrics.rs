//! The lock's metrics (feature `metrics`), read back from an in-memory recorder: an
//! acquisition, a busy try, a hold, a lost lease and renewals, each with its labels (two
//! clients told apart by namespace); a breaker's availability gauge, transitions and refused
//! calls; `describe()`'s help texts and units.

use std::time::Duration;

use lock_core::breaker::{Breaker, BreakerOptions};
use lock_core::metrics::{
    ACQUIRE_TOTAL, ACQUIRE_WAIT_SECONDS, BACKEND_AVAILABLE, BREAKER_REFUSED_TOTAL,
    BREAKER_TRANSITIONS_TOTAL, HOLD_SECONDS, LOST_TOTAL, RENEWALS_TOTAL,
};
use lock_core::{LeaseMode, LockClient, LockOwner, MemoryBackend};
use metrics::Unit;

use crate::metrics_support::{counter, gauge, histogram_samples_with, local_recorder};

#[tokio::test]
async fn the_lock_records_its_metrics() {
    let (snapshotter, _recording) = local_recorder();
    let backend = MemoryBackend::new();
    let locks = LockClient::builder(backend.clone())
        .namespace("shop")
        .build()
        .unwrap();

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
    assert!(backend.simulate_external_delete("shop:m"));
    guard.lost().await;
    drop(guard);

    let metrics = snapshotter.snapshot().into_vec();
    let shop = ("namespace", "shop");
    let acquired = [("backend", "memory"), shop, ("outcome", "acquired")];
    assert_eq!(counter(&metrics, ACQUIRE_TOTAL, &acquired), 1);
    let busy = [("backend", "memory"), shop, ("outcome", "busy")];
    assert_eq!(counter(&metrics, ACQUIRE_TOTAL, &busy), 1);
    let lost = [("backend", "memory"), shop, ("reason", "not_owner")];
    assert_eq!(counter(&metrics, LOST_TOTAL, &lost), 1);
    let held = [("backend", "memory"), shop];
    assert_eq!(histogram_samples_with(&metrics, HOLD_SECONDS, &held), 1);
    let renewed = [("backend", "memory"), shop, ("result", "ok")];
    assert!(counter(&metrics, RENEWALS_TOTAL, &renewed) >= 2);
    // The label set of each lock metric, whatever the values.
    for (key, ..) in &metrics {
        let name = key.key().name();
        if [ACQUIRE_TOTAL, LOST_TOTAL, RENEWALS_TOTAL, HOLD_SECONDS].contains(&name) {
            assert!(
                key.key().labels().any(|label| label.key() == "namespace"),
                "{key:?}"
            );
        }
    }
}

/// Two clients on one backend are told apart by their namespace; a client without one is
/// `namespace=""`.
#[tokio::test]
async fn two_clients_are_told_apart_by_namespace() {
    let (snapshotter, _recording) = local_recorder();
    let backend = MemoryBackend::new();
    let orders = LockClient::builder(backend.clone())
        .namespace("orders")
        .build()
        .unwrap();
    let bare = LockClient::new(backend);
    orders.lock("a").await.unwrap().release().await.unwrap();
    orders.lock("b").await.unwrap().release().await.unwrap();
    bare.lock("a").await.unwrap().release().await.unwrap();
    let metrics = snapshotter.snapshot().into_vec();
    let acquired = |namespace| {
        let labels = [("namespace", namespace), ("outcome", "acquired")];
        counter(&metrics, ACQUIRE_TOTAL, &labels)
    };
    assert_eq!((acquired("orders"), acquired("")), (2, 1));
}

/// `describe()` gives every metric its help text, and the histograms their unit.
#[tokio::test]
async fn describe_registers_help_and_units() {
    let (snapshotter, _recording) = local_recorder();
    lock_core::metrics::describe();
    // The debugging recorder shows a description with the metric once it is recorded.
    let locks = LockClient::new(MemoryBackend::new());
    locks.lock("d").await.unwrap().release().await.unwrap();
    let metrics = snapshotter.snapshot().into_vec();
    let described = |name: &str| {
        metrics
            .iter()
            .find(|(key, ..)| key.key().name() == name)
            .map(|(_, unit, help, _)| (*unit, help.as_ref().map(|help| help.to_string())))
    };
    let (unit, help) = described(ACQUIRE_WAIT_SECONDS).expect("recorded");
    assert_eq!(unit, Some(Unit::Seconds));
    assert!(help.unwrap().contains("acquisitions"));
    let (unit, help) = described(ACQUIRE_TOTAL).expect("recorded");
    assert_eq!(unit, Some(Unit::Count));
    assert!(help.unwrap().contains("by outcome"));
    let (unit, _) = described(HOLD_SECONDS).expect("recorded");
    assert_eq!(unit, Some(Unit::Seconds));
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
