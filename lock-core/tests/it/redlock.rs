//! RedLock over independent `redis-server`s of the test's own (it kills, restarts and pauses
//! them): the conformance suite on 3 nodes, the fencing token across nodes restarted without
//! persistence and counters out of step, and 5 nodes with 2, then 3, paused.

use std::time::Duration;

use lock_core::{LockClient, LockError, RedLock, RedisBackend};
use lock_testing::{free_port, RedisServer};
use tokio::time::{timeout, Instant};

use crate::conformance::{self, unique_key, Harness};

/// `count` throwaway servers, each in a directory of its own.
fn servers(count: usize, name: &str) -> Vec<RedisServer> {
    (0..count)
        .map(|i| {
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
                "redlock-{name}-{}-{i}-{}",
                std::process::id(),
                lock_testing::unique("n")
            ));
            RedisServer::start(free_port(), dir)
        })
        .collect()
}

/// A RedLock over `servers` (fresh connections, as another process would have).
async fn redlock(servers: &[RedisServer], node_timeout: Duration) -> RedLock {
    let mut nodes = Vec::new();
    for server in servers {
        let node = RedisBackend::builder(server.url())
            .response_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap();
        nodes.push(node);
    }
    RedLock::builder(nodes)
        .node_timeout(node_timeout)
        .build()
        .unwrap()
}

async fn admin(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The lock keys (not counters, not queues) a server holds.
async fn lock_keys(server: &RedisServer) -> Vec<String> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut admin(server).await)
        .await
        .unwrap();
    keys.into_iter().filter(|k| k.ends_with('}')).collect()
}

fn signal(server: &RedisServer, name: &str) {
    let pid = server.pid().expect("running").to_string();
    let sent = std::process::Command::new("kill")
        .args([name, pid.as_str()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {name}");
}

struct Nodes {
    servers: Vec<RedisServer>,
    names: RedisBackend,
}

async fn three_nodes() -> Option<Nodes> {
    let servers = servers(3, "conformance");
    let names = RedisBackend::connect(&servers[0].url()).await.unwrap();
    Some(Nodes { servers, names })
}

impl Harness for Nodes {
    async fn client(&self) -> LockClient {
        conformance::client_on(redlock(&self.servers, Duration::from_millis(200)).await)
    }

    /// Deletes the lock on every node: a majority no longer confirms it.
    async fn delete_behind(&self, full_key: &str) {
        let key = self.names.redis_key(full_key);
        let mut deleted = 0;
        for server in &self.servers {
            let n: i64 = redis::cmd("DEL")
                .arg(&key)
                .query_async(&mut admin(server).await)
                .await
                .unwrap();
            deleted += n;
        }
        assert!(deleted >= 2, "the lock was on {deleted} nodes");
    }

    /// RedLock keeps no queue: waiters retry.
    async fn queued(&self, _full_key: &str) -> usize {
        0
    }
}

// Every check but `cancelled_waiter_leaves_nothing`, which watches a queue entry come and go
// (a RedLock waiter retries after a pause and has none; `dropped_acquires_leave_nothing`
// covers what a dropped waiter leaves).
crate::conformance::conformance_suite!(@tests three_nodes();
    exclusion, try_on_held_key, wait_timeout, wakeup_latency, crashed_holder_expires,
    watchdog_holds_past_ttl, lost_fires_on_delete, non_owner_refused, fencing_increases,
    reentrancy, dropped_acquires_leave_nothing, dropped_releases_still_release,
    bad_input_is_typed, with_lock_releases_on_every_path, shutdown_releases_every_lease);

/// Fewer than 3 nodes, more than 16, or one node twice: a typed configuration error.
#[tokio::test]
async fn bad_node_sets_are_refused() {
    let servers = servers(1, "config");
    let node = RedisBackend::connect(&servers[0].url()).await.unwrap();
    for nodes in [
        vec![],
        vec![
            node.clone(),
            RedisBackend::connect(&servers[0].url()).await.unwrap(),
        ],
        vec![
            node.clone(),
            node.clone(),
            RedisBackend::connect(&servers[0].url()).await.unwrap(),
        ],
        vec![node.clone(); 17],
    ] {
        let count = nodes.len();
        let error = RedLock::new(nodes).unwrap_err();
        assert!(
            matches!(error, LockError::InvalidConfig(_)),
            "{count}: {error}"
        );
    }
    let zero = RedLock::builder(vec![node; 3])
        .node_timeout(Duration::ZERO)
        .build();
    assert!(zero.is_err());
}

/// Tokens go up across every node restarted without persistence, one after the other, and
/// across counters out of step (one node far ahead, raised by hand): the grant raises a
/// quorum to its counter before handing the token out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_increase_across_restarts_and_counters_out_of_step() {
    let mut servers = servers(3, "fence");
    timeout(Duration::from_secs(60), async {
        let key = unique_key("fence");
        let mut last = 0;
        let take = |locks: LockClient| {
            let key = key.clone();
            async move {
                let guard = locks.lock(&key).await.unwrap();
                let token = guard.fencing_token().get();
                assert!(guard.release().await.unwrap());
                token
            }
        };
        let locks = LockClient::new(redlock(&servers, Duration::from_millis(200)).await);
        let full = {
            let guard = locks.lock(&key).await.unwrap();
            let full = guard.key().full().to_owned();
            assert!(guard.release().await.unwrap());
            full
        };
        let names = RedisBackend::connect(&servers[0].url()).await.unwrap();
        let counter = format!("{}:fence", names.redis_key(&full));
        for round in 0..3 {
            let token = take(locks.clone()).await;
            assert!(token > last, "round {round}: token {token} after {last}");
            last = token;
            // Node `round` restarts empty; the next grant must still go up.
            servers[round].kill();
            servers[round].spawn();
            let token = take(LockClient::new(
                redlock(&servers, Duration::from_millis(200)).await,
            ))
            .await;
            assert!(
                token > last,
                "after restarting node {round}: {token} after {last}"
            );
            last = token;
        }
        // One node far ahead (a counter the others never saw): the next token is past it,
        // and a quorum's counters are raised to it.
        let ahead: u64 = 9_000_000_000_000_000 / 16;
        let _: () = redis::cmd("SET")
            .arg(&counter)
            .arg(ahead)
            .query_async(&mut admin(&servers[2]).await)
            .await
            .unwrap();
        let token = take(locks.clone()).await;
        assert!(
            token / 16 > ahead,
            "token {token} does not pass the counter {ahead}"
        );
        let mut at_least = 0;
        for server in &servers {
            let value: Option<u64> = redis::cmd("GET")
                .arg(&counter)
                .query_async(&mut admin(server).await)
                .await
                .unwrap();
            at_least += usize::from(value.unwrap_or(0) >= token / 16);
        }
        assert!(
            at_least >= 2,
            "only {at_least} counters reached the token's"
        );
        // Node 2 (the one ahead) restarts empty: the quorum of the other two carries on.
        servers[2].kill();
        servers[2].spawn();
        let next = take(locks.clone()).await;
        assert!(next > token, "{next} after {token}");
    })
    .await
    .expect("bounded");
}

/// 5 nodes: with 2 paused (SIGSTOP) acquisitions go on; with 3 paused an acquisition fails
/// within its budget and leaves no lock key on any node, paused ones included once they run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_paused_is_outvoted_and_a_majority_paused_fails_cleanly() {
    let servers = servers(5, "faults");
    let node_timeout = Duration::from_millis(100);
    let locks = LockClient::new(redlock(&servers, node_timeout).await);
    timeout(Duration::from_secs(60), async {
        let key = unique_key("faults");
        signal(&servers[0], "-STOP");
        signal(&servers[1], "-STOP");
        let mut last = 0;
        for _ in 0..20 {
            let guard = locks
                .lock(&key)
                .acquire_within(Duration::from_secs(2))
                .await
                .unwrap()
                .expect("granted by the 3 running nodes");
            assert!(guard.fencing_token().get() > last);
            last = guard.fencing_token().get();
            assert!(guard.release().await.unwrap());
        }

        signal(&servers[2], "-STOP");
        let started = Instant::now();
        let error = locks
            .lock(&key)
            .acquire_within(Duration::from_secs(2))
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert!(error.is_unavailable(), "{error}");
        assert!(took < node_timeout * 10, "failed after {took:?}");
        for server in &servers[3..] {
            assert_eq!(lock_keys(server).await, Vec::<String>::new());
        }
        for server in &servers[..3] {
            signal(server, "-CONT");
        }
        // The paused nodes now run what reached them: each grant, then its release.
        let deadline = Instant::now() + Duration::from_secs(10);
        for server in &servers {
            while !lock_keys(server).await.is_empty() {
                assert!(Instant::now() < deadline, "a lock key was left behind");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let guard = locks.lock(&key).try_acquire().await.unwrap();
        assert!(guard.expect("free again").fencing_token().get() > last);
    })
    .await
    .expect("bounded");
}

/// Many quick cycles leave no lease behind on any node, the slowest included: a release that
/// returns once a quorum released still reaches the others (the Redis client drops a queued
/// command nobody waits for, so the release is sent again), and a lone client of one node
/// never waits out a TTL for a RedLock that is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_cycles_leave_no_lease_on_any_node() {
    let servers = servers(3, "leftovers");
    let locks = LockClient::new(redlock(&servers, Duration::from_millis(200)).await);
    timeout(Duration::from_secs(60), async {
        // 16 tasks at once keep each connection's writer busy, where a queued command is
        // most likely still waiting when its caller stops.
        let tasks: Vec<_> = (0..16)
            .map(|task| {
                let locks = locks.clone();
                tokio::spawn(async move {
                    for i in 0..40 {
                        let guard = locks.lock(format!("quick:{task}:{}", i % 4)).await.unwrap();
                        assert!(guard.release().await.unwrap());
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        for server in &servers {
            loop {
                let left = lock_keys(server).await;
                if left.is_empty() {
                    break;
                }
                assert!(Instant::now() < deadline, "leases left behind: {left:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await
    .expect("bounded");
}

/// A grant that a node makes after the quorum answered (the acquisition stopped waiting for
/// it) is renewed like the others: with that node's answer late and then another node paused
/// past the lease, the holder keeps a majority and its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_grant_is_renewed_with_the_others() {
    let servers = servers(3, "late");
    let locks = LockClient::new(redlock(&servers, Duration::from_millis(200)).await);
    let other = LockClient::new(redlock(&servers, Duration::from_millis(200)).await);
    timeout(Duration::from_secs(30), async {
        let key = unique_key("late");
        let ttl = Duration::from_millis(600);
        // Node 3 answers after nodes 1 and 2 granted: the grant does not wait for it.
        signal(&servers[2], "-STOP");
        let guard = locks
            .lock(&key)
            .lease(lock_core::LeaseMode::watchdog(ttl))
            .await
            .unwrap();
        signal(&servers[2], "-CONT");
        // Node 3's grant lands; then node 1 goes quiet for two leases.
        while lock_keys(&servers[2]).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        signal(&servers[0], "-STOP");
        tokio::time::sleep(ttl * 2).await;
        signal(&servers[0], "-CONT");
        assert!(!guard.is_lost(), "lost with nodes 2 and 3 still holding it");
        assert!(
            other.lock(&key).try_acquire().await.unwrap().is_none(),
            "another client got the key while the holder had a majority"
        );
        assert!(guard.release().await.unwrap());
    })
    .await
    .expect("bounded");
}

/// A RedLock started while one node of three is down starts (2 of 3 answer), locks, names the
/// down node in its errors once a second node goes, and takes the first node back once it is
/// up: connected in the background, it answers again without a new RedLock. With two of three
/// down at the start, `connect` fails naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_starts_with_a_minority_down_and_connects_it_later() {
    let mut servers = servers(3, "start-down");
    timeout(Duration::from_secs(60), async {
        let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let down_port = servers[2].port();
        servers[2].kill();

        let redlock = RedLock::connect(&urls)
            .await
            .expect("a minority down refused the start");
        assert_eq!(redlock.nodes().iter().flatten().count(), 2);
        let locks = conformance::client_on(redlock.clone());
        let key = unique_key("start-down");
        let guard = locks
            .lock(&key)
            .try_acquire()
            .await
            .unwrap()
            .expect("2 of 3 grant");
        assert!(guard.release().await.unwrap());

        // A second node down: no quorum, and the error names the node that was never reached.
        servers[1].kill();
        let error = locks.lock(&key).try_acquire().await.unwrap_err();
        assert!(error.is_unavailable(), "{error}");
        let message = error.with_causes();
        assert!(
            message.contains(&format!("node 2 (127.0.0.1:{down_port}) not connected")),
            "{message}"
        );
        assert!(message.contains("node 1 ("), "{message}");

        // The never-connected node comes up: the background connection takes it, and the lock
        // is granted again by nodes 0 and 2.
        servers[2].spawn();
        let started = Instant::now();
        loop {
            if let Some(guard) = locks.lock(&key).try_acquire().await.unwrap_or(None) {
                assert!(guard.release().await.unwrap());
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "node 2 never joined"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(redlock.nodes().iter().flatten().count(), 3);

        // Two of three down at the start: refused, both named.
        servers[0].kill();
        let error = RedLock::connect(&urls).await.unwrap_err();
        let message = error.with_causes();
        assert!(error.is_unavailable(), "{message}");
        assert!(
            message.contains("1 of 3 nodes reachable, 2 needed")
                && message.contains("node 0 (")
                && message.contains("node 1 ("),
            "{message}"
        );
        // One URL twice: a configuration error.
        let twice = RedLock::connect(&[urls[0], urls[1], urls[0]])
            .await
            .unwrap_err();
        assert!(matches!(twice, LockError::InvalidConfig(_)), "{twice}");
    })
    .await
    .expect("bounded");
}
