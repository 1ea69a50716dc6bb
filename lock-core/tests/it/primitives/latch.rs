//! The count-down latch: push at zero, set-once, expiry, typed bad input.

use std::time::Duration;

use tokio::time::Instant;

use super::offered;
use crate::conformance::{bounded, unique_key, Harness};

/// Waiters on other clients return once the count reaches zero, and not before.
pub(crate) async fn latch_opens_at_zero_by_push<H: Harness>(h: &H) {
    let Some(a) = offered(h, "latch_opens_at_zero_by_push", |p| p.latch).await else {
        return;
    };
    bounded(async {
        let key = unique_key("latch-push");
        let latch = a.latch(&key);
        assert!(latch.try_set_count(3).await.unwrap());
        let mut waiters = Vec::new();
        for _ in 0..3 {
            let other = h.client().await.latch(&key);
            waiters.push(tokio::spawn(async move { other.wait().await.unwrap() }));
        }
        assert_eq!(latch.count_down().await.unwrap(), 2);
        assert_eq!(latch.count_down().await.unwrap(), 1);
        assert!(!h
            .client()
            .await
            .latch(&key)
            .wait_within(Duration::from_millis(20))
            .await
            .unwrap());
        assert!(
            waiters.iter().all(|w| !w.is_finished()),
            "a waiter left before zero"
        );
        let opened = Instant::now();
        assert_eq!(latch.count_down().await.unwrap(), 0);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert!(opened.elapsed() < Duration::from_secs(1), "woken by push");
        assert_eq!(latch.count().await.unwrap(), 0);
        assert_eq!(
            latch.count_down().await.unwrap(),
            0,
            "an open latch stays open"
        );
    })
    .await;
}

/// A running latch cannot be set again; an expired one counts as zero and can be.
pub(crate) async fn latch_set_count_and_expiry<H: Harness>(h: &H) {
    let Some(a) = offered(h, "latch_set_count_and_expiry", |p| p.latch).await else {
        return;
    };
    bounded(async {
        let key = unique_key("latch-expiry");
        let latch = a.latch(&key).expire_after(Duration::from_millis(300));
        assert_eq!(latch.count().await.unwrap(), 0, "never set");
        assert!(latch.try_set_count(2).await.unwrap());
        assert!(!latch.try_set_count(5).await.unwrap(), "already running");
        assert_eq!(latch.count().await.unwrap(), 2);
        // Nobody counts down: the wait ends with the latch's expiry.
        let waited = Instant::now();
        latch.wait().await.unwrap();
        assert!(waited.elapsed() < Duration::from_secs(5));
        assert_eq!(latch.count().await.unwrap(), 0);
        assert!(
            latch.try_set_count(1).await.unwrap(),
            "set again after expiry"
        );
        assert_eq!(latch.count_down().await.unwrap(), 0);
    })
    .await;
}

/// A count of 0 and an expiry out of bounds are typed errors.
pub(crate) async fn latch_bad_input_is_typed<H: Harness>(h: &H) {
    let Some(a) = offered(h, "latch_bad_input_is_typed", |p| p.latch).await else {
        return;
    };
    bounded(async {
        let key = unique_key("latch-bad");
        let err = a.latch(&key).try_set_count(0).await.unwrap_err();
        assert!(err.is_invalid_input(), "{err}");
        let err = a
            .latch(&key)
            .expire_after(Duration::ZERO)
            .try_set_count(1)
            .await
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err}");
        assert!(a.latch("").count().await.unwrap_err().is_invalid_input());
    })
    .await;
}
