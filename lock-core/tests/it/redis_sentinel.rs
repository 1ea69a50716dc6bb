//! The conformance suites of the lock and the primitives on the primary of the stack's
//! Sentinel set (`LOCK_TEST_REDIS_SENTINEL_URLS`: a primary, 2 replicas, 3 sentinels), found
//! through the sentinels.

use crate::conformance::conformance_suite;
use crate::primitives::primitives_suite;
use crate::redis_cluster::on;
use crate::redis_support::Deployment;

conformance_suite!(on(Deployment::sentinel()));
primitives_suite!(on(Deployment::sentinel()));

mod replication_acks {
    use std::time::Duration;

    use lock_core::LockClient;

    use crate::conformance::{bounded, unique_key};
    use crate::redis_support::Deployment;

    /// A grant that reached the replicas asked for is granted; one that could not (more
    /// replicas asked for than there are) is given back and fails closed, leaving the lock
    /// free for the next caller. The lock and a fair lock (the primitives' scripts) alike.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grants_wait_for_replicas_and_fail_closed_without_them() {
        let Some(deployment) = Deployment::sentinel() else {
            return;
        };
        bounded(async {
            let acked = deployment
                .builder()
                .wait_for_replicas(2, Duration::from_millis(500))
                .connect()
                .await
                .unwrap();
            let short = deployment
                .builder()
                .wait_for_replicas(3, Duration::from_millis(100))
                .connect()
                .await
                .unwrap();
            let (acked, short) = (LockClient::new(acked), LockClient::new(short));
            for fair in [false, true] {
                let key = unique_key("acks");
                let error = if fair {
                    short.fair_lock(&key).try_acquire().await.unwrap_err()
                } else {
                    short.lock(&key).try_acquire().await.unwrap_err()
                };
                assert!(error.is_unavailable(), "{error}");
                assert!(
                    error.with_causes().contains("replicas"),
                    "{}",
                    error.with_causes()
                );
                let guard = if fair {
                    acked.fair_lock(&key).try_acquire().await
                } else {
                    acked.lock(&key).try_acquire().await
                };
                let guard = guard.unwrap_or_else(|e| panic!("{}", e.with_causes()));
                let guard = guard.expect("the unacknowledged grant was given back");
                assert!(guard.release().await.unwrap());
            }
        })
        .await;
    }

    /// The timeout must leave room within the response timeout.
    #[tokio::test]
    async fn a_wait_as_long_as_the_response_timeout_is_refused() {
        let Some(deployment) = Deployment::sentinel() else {
            return;
        };
        let error = deployment
            .builder()
            .response_timeout(Duration::from_secs(1))
            .wait_for_replicas(1, Duration::from_secs(1))
            .connect()
            .await
            .unwrap_err();
        assert!(
            matches!(error, lock_core::LockError::InvalidConfig(_)),
            "{error}"
        );
    }
}
