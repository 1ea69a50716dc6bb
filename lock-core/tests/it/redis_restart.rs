//! A Redis restart (without persistence) in the middle of holding and waiting: the client
//! reconnects, holders whose lease vanished get `lost()`, fencing tokens keep increasing, and
//! waiters get the lock afterwards.
//!
//! The test runs its own `redis-server` on a free loopback port, since it must kill it.

use std::time::Duration;

use lock_core::{LockClient, LostReason, RedisBackend};
use lock_testing::{free_port, RedisServer};
use tokio::time::{timeout, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_is_survived_and_reported() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-restart-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    timeout(Duration::from_secs(60), async {
        let backend = RedisBackend::builder(server.url())
            .response_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap();
        let locks = LockClient::new(backend);
        let ttl = Duration::from_millis(900);
        let holder = locks
            .lock("restart")
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        let fence_before = holder.fencing_token();

        server.kill();
        let waiter = tokio::spawn({
            let locks = locks.clone();
            async move {
                // Owned by another task: waits across the outage (errors while down are retried
                // by the caller, as a service would).
                loop {
                    match locks
                        .lock("restart")
                        .lease(lock_core::LeaseMode::watchdog(ttl))
                        .acquire_within(Duration::from_secs(20))
                        .await
                    {
                        Ok(Some(guard)) => return guard.fencing_token(),
                        Ok(None) => panic!("never granted"),
                        Err(e) => {
                            assert!(e.is_unavailable(), "{e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }
        });
        let down_at = Instant::now();
        tokio::time::sleep(Duration::from_millis(200)).await; // an outage of some length
        server.spawn();

        // The key vanished with the restart: the holder learns it within its lease.
        let reason = timeout(ttl * 2, holder.lost())
            .await
            .expect("lost() did not fire");
        assert!(
            matches!(
                reason,
                LostReason::NotOwner | LostReason::RenewalFailed(_) | LostReason::Expired
            ),
            "{reason:?}"
        );
        assert!(down_at.elapsed() < ttl * 3);
        assert!(!holder.release().await.unwrap_or(false));

        let fence_after = waiter.await.unwrap();
        assert!(
            fence_after > fence_before,
            "fencing went backwards across the restart: {fence_after} after {fence_before}"
        );
    })
    .await
    .expect("bounded");
}

/// With the default 30 s lease, a restart without persistence reaches the holder's `lost()`
/// within a round trip of the reconnect, not at its next renewal (10 s after the grant), while
/// another client can take the lock as soon as the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_is_reported_at_the_reconnect_not_the_next_renewal() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-restart-fast-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    timeout(Duration::from_secs(60), async {
        let connect = || {
            RedisBackend::builder(server.url())
                .response_timeout(Duration::from_millis(500))
                .connect()
        };
        let (holder_side, other_side) = (
            LockClient::new(connect().await.unwrap()),
            LockClient::new(connect().await.unwrap()),
        );
        let holder = holder_side.lock("restart-fast").await.unwrap();
        assert_eq!(holder.lease_mode().ttl(), Duration::from_secs(30));

        server.kill();
        server.spawn();
        let back_at = Instant::now();
        let taken = tokio::spawn(async move {
            loop {
                // Errors while the client reconnects are retried, as a service would.
                if let Ok(Some(guard)) = other_side.lock("restart-fast").try_acquire().await {
                    return (Instant::now(), guard.fencing_token());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        let reason = timeout(Duration::from_secs(5), holder.lost())
            .await
            .expect("lost() waited for the next renewal");
        let lost_after = back_at.elapsed();
        assert_eq!(reason, LostReason::NotOwner);
        let (taken_at, _) = timeout(Duration::from_secs(5), taken).await.unwrap().unwrap();
        eprintln!(
            "restart: another client held the lock {:?} after the server was back; the old holder's lost() fired after {lost_after:?}",
            taken_at.duration_since(back_at)
        );
        assert!(lost_after < Duration::from_secs(2), "{lost_after:?}");
    })
    .await
    .expect("bounded");
}
