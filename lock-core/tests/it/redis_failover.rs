//! A failover to a replica that missed the last grants: the promoted replica still has every
//! fencing counter, at older values, and none of the lock keys, so it grants again; the tokens
//! it hands out must still be larger than every token the old primary gave.
//!
//! The test runs a primary and a replica of its own, the replica's replication link through a
//! proxy it cuts (a partitioned or lagging replica), grants on the primary, kills it and
//! promotes the replica (`REPLICAOF NO ONE`, what Sentinel or a managed service does).

use std::time::Duration;

use lock_core::{FencingToken, LockClient, LockGuard, LockOwner, RedisBackend};
use lock_testing::{free_port, RedisServer};
use tokio::time::{timeout, Instant};

use crate::proxy_support::Proxy;

/// The kinds of lease that hand out fencing tokens from a counter: the plain lock
/// (`acquire.lua`, as idempotency claims and cache leases), and the fair lock, read-write
/// lock and semaphore (`primitive_lib.lua`).
#[derive(Clone, Copy, Debug)]
enum Kind {
    Lock,
    Fair,
    Write,
    Permit,
}

const KINDS: [Kind; 4] = [Kind::Lock, Kind::Fair, Kind::Write, Kind::Permit];

/// One grant of `kind` on `locks`, held by `owner`; `on` names the server in a failure.
async fn grant(locks: &LockClient, kind: Kind, owner: &LockOwner, on: &str) -> LockGuard {
    let ttl = Duration::from_secs(30);
    let granted = match kind {
        Kind::Lock => {
            locks
                .lock("failover")
                .owner(owner)
                .lease(lock_core::LeaseMode::watchdog(ttl))
                .try_acquire()
                .await
        }
        Kind::Fair => {
            let request = locks.fair_lock("failover-fair").owner(owner);
            request
                .lease(lock_core::LeaseMode::watchdog(ttl))
                .try_acquire()
                .await
        }
        Kind::Write => {
            let lock = locks.read_write_lock("failover-rw");
            lock.write()
                .owner(owner)
                .lease(lock_core::LeaseMode::watchdog(ttl))
                .try_acquire()
                .await
        }
        Kind::Permit => {
            let semaphore = locks.semaphore("failover-sem", 1);
            semaphore
                .acquire(1)
                .owner(owner)
                .lease(lock_core::LeaseMode::watchdog(ttl))
                .try_acquire()
                .await
        }
    };
    granted
        .unwrap_or_else(|e| panic!("{kind:?} on the {on}: {e}"))
        .unwrap_or_else(|| panic!("{kind:?} was busy on the {on}"))
}

async fn command(url: &str, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut connection).await.unwrap()
}

async fn replication_info(url: &str) -> String {
    match command(url, &["INFO", "replication"]).await {
        redis::Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
        redis::Value::VerbatimString { text, .. } => text,
        other => panic!("INFO answered {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_replica_that_missed_grants_hands_out_larger_tokens() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-failover-{}", std::process::id()));
    let mut primary = RedisServer::start(free_port(), dir.join("primary"));
    let replica = RedisServer::start(free_port(), dir.join("replica"));
    let link = Proxy::start(&format!("127.0.0.1:{}", primary.port())).await;
    timeout(Duration::from_secs(60), async {
        let (host, port) = link.addr.split_once(':').unwrap();
        command(&replica.url(), &["REPLICAOF", host, port]).await;
        let started = Instant::now();
        while !replication_info(&replica.url())
            .await
            .contains("master_link_status:up")
        {
            assert!(started.elapsed() < Duration::from_secs(20), "no replication");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let on_primary = RedisBackend::builder(primary.url())
            .response_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap();
        let on_primary = LockClient::new(on_primary);
        let owner = LockOwner::new();
        let mut issued: Vec<(Kind, FencingToken)> = Vec::new();
        // One grant of each kind that the replica sees.
        for kind in KINDS {
            let guard = grant(&on_primary, kind, &owner, "primary").await;
            issued.push((kind, guard.fencing_token()));
            assert!(guard.release().await.unwrap());
        }
        let acknowledged = command(&primary.url(), &["WAIT", "1", "5000"]).await;
        assert_eq!(acknowledged, redis::Value::Int(1), "not replicated");

        // The link is cut (and the replica's reconnections refused); the primary goes on granting (the last grant of each kind is still
        // held when it dies).
        link.cut();
        let mut held = Vec::new();
        for kind in KINDS {
            for round in 0..3 {
                let guard = grant(&on_primary, kind, &owner, "primary").await;
                issued.push((kind, guard.fencing_token()));
                if round < 2 {
                    assert!(guard.release().await.unwrap());
                } else {
                    held.push(guard);
                }
            }
        }
        primary.kill();
        command(&replica.url(), &["REPLICAOF", "NO", "ONE"]).await;

        let on_replica = LockClient::new(RedisBackend::connect(&replica.url()).await.unwrap());
        let other = LockOwner::new();
        for kind in KINDS {
            let guard = grant(&on_replica, kind, &other, "promoted replica").await;
            let token = guard.fencing_token();
            let earlier = issued
                .iter()
                .filter(|(k, _)| std::mem::discriminant(k) == std::mem::discriminant(&kind))
                .map(|(_, token)| *token)
                .collect::<Vec<_>>();
            assert!(
                earlier.iter().all(|before| *before < token),
                "{kind:?}: the promoted replica granted {token} after the primary granted {earlier:?}"
            );
            assert!(guard.release().await.unwrap());
        }
        drop(held);
    })
    .await
    .expect("bounded");
}
