//! The stampede-protection cache across processes on a real Redis: a cold key hit by 1,000
//! callers in two processes calls the origin once; a computing process killed mid-compute
//! hands over within its lease, and with the default settings the caller that takes over
//! stores its value (on Redis and on PostgreSQL); a computing process paused past its lease
//! cannot overwrite the value of the caller that took over; Redis down means fail open, and
//! collapsing resumes when it is back.
//!
//! The test binary starts itself again as the second process (`LOCK_TEST_CACHE_CHILD` set), as
//! the SQL kill tests do.

use std::time::Duration;

use lock_core::cache::{Cache, CacheStatus};
use lock_core::{LeaseMode, RedisBackend};
use lock_testing::{free_port, RedisServer};
use tokio::io::AsyncWriteExt;
use tokio::time::{timeout, Instant};

use crate::cache_support::{self, answer, assert_got, crowd, redis_url, unique, Origin};
use crate::child_support::ChildTest;

const CHILD_ENV: &str = "LOCK_TEST_CACHE_CHILD";
/// `child_process`'s name in the test binary, as `--exact` wants it.
const CHILD_TEST: &str = "cache_processes::child_process";
const BOUND: Duration = Duration::from_secs(60);
/// The lease of a computation in the kill test: the time a killed computer can block others.
const KILL_LEASE: Duration = Duration::from_millis(1_500);

async fn cache(url: &str, lease: LeaseMode) -> Cache {
    let backend = RedisBackend::builder(url)
        .response_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    cache_support::on_redis(backend)
        .await
        .lease(lease)
        .build()
        .unwrap()
}

/// The origin: counts its calls in Redis (so both processes count in one place), then answers
/// after `delay`.
async fn origin(url: String, key: String, delay: Duration) -> Result<Vec<u8>, String> {
    let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let _: i64 = redis::cmd("INCR")
        .arg(format!("cache-test:origin:{key}"))
        .query_async(&mut connection)
        .await
        .map_err(|e| e.to_string())?;
    tokio::time::sleep(delay).await;
    Ok(format!("value of {key}").into_bytes())
}

async fn origin_calls(url: &str, key: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("GET")
        .arg(format!("cache-test:origin:{key}"))
        .query_async::<Option<i64>>(&mut connection)
        .await
        .unwrap()
        .unwrap_or(0)
}

/// `callers` concurrent reads of `key` on one cache, origin counted in Redis; returns
/// (computed, collapsed) counts.
async fn crowd_here(cache: &Cache, url: &str, key: &str, callers: usize) -> (usize, usize) {
    let compute = {
        let (url, key) = (url.to_owned(), key.to_owned());
        move || origin(url.clone(), key.clone(), Duration::from_millis(400))
    };
    let (mut computed, mut collapsed) = (0, 0);
    for got in crowd(std::slice::from_ref(cache), callers, key, compute).await {
        match got.status {
            CacheStatus::Computed => computed += 1,
            CacheStatus::Collapsed | CacheStatus::Hit => collapsed += 1,
            other => panic!("unexpected status {other:?}"),
        }
    }
    (computed, collapsed)
}

/// The Redis URL for a test's own side: `None` in the second process (where only
/// `child_process` acts) and when there is no server.
fn parent_url() -> Option<String> {
    if std::env::var(CHILD_ENV).is_ok() {
        return None;
    }
    redis_url()
}

/// Starts `child_process` as the second process in `role` for `key`, and waits for its line
/// holding `ready`.
async fn start_child(role: &str, key: &str, ready: &str) -> ChildTest {
    let mut child = ChildTest::start(CHILD_TEST, CHILD_ENV, &format!("{role}:{key}"));
    child.line_with(ready).await;
    child
}

/// Runs only as the second process (see the tests below); does nothing otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process() {
    let Ok(request) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (role, key) = request.split_once(':').unwrap();
    let url = redis_url().unwrap();
    match role {
        "crowd" => {
            let cache = cache(&url, LeaseMode::default()).await;
            println!("READY");
            tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
                .await
                .unwrap()
                .unwrap();
            let (computed, collapsed) = crowd_here(&cache, &url, key, 500).await;
            println!("DONE {computed} {collapsed}");
        }
        "computer" => {
            let cache = cache(&url, LeaseMode::watchdog(KILL_LEASE)).await;
            let never = cache
                .entry(key)
                .try_get_with(|| async {
                    println!("COMPUTING");
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok::<_, String>(b"never".to_vec())
                })
                .await;
            panic!("the computer was meant to be killed, not to finish: {never:?}");
        }
        "takeover-redis" | "takeover-postgres" | "paused-redis" => {
            let store = if role.ends_with("postgres") {
                Store::Postgres
            } else {
                Store::Redis
            };
            let (cache, _) = store.instance().await;
            let took = if role.starts_with("paused") {
                Duration::from_secs(2)
            } else {
                Duration::from_secs(60)
            };
            let got = cache
                .entry(key)
                .try_get_with(move || async move {
                    println!("COMPUTING");
                    tokio::time::sleep(took).await;
                    Ok::<_, String>(b"old".to_vec())
                })
                .await
                .unwrap();
            println!("DONE {:?}", got.status);
        }
        other => panic!("unknown child role {other}"),
    }
}

/// Where a default cache keeps its values and leases, across processes.
#[derive(Clone, Copy, Debug)]
enum Store {
    /// `RedisResultStore` and `RedisBackend`.
    Redis,
    /// `PostgresResultStore` and `PostgresBackend`.
    Postgres,
}

/// What tells how many callers of this process queue for a computation's lease.
enum Queue {
    Redis {
        url: String,
        names: RedisBackend,
    },
    #[cfg(feature = "postgres")]
    Postgres(lock_core::PostgresBackend),
}

impl Queue {
    async fn waiting(&self, key: &str) -> usize {
        match self {
            Self::Redis { url, names } => cache_support::redis_lease_waiters(url, names, key).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(backend) => backend.waiters(&cache_support::lease_key(key)),
        }
    }
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Postgres => "postgres",
        }
    }

    /// The store's server; `None` when there is none.
    fn url(self) -> Option<String> {
        let var = match self {
            Self::Redis => "LOCK_TEST_REDIS_URL",
            Self::Postgres => "LOCK_TEST_POSTGRES_URL",
        };
        lock_testing::server_url(var).expect("test server")
    }

    /// A cache with the default settings on this store, and its waiter count.
    async fn instance(self) -> (Cache, Queue) {
        let url = self.url().expect("the store's server");
        match self {
            Self::Redis => {
                let backend = RedisBackend::connect(&url).await.unwrap();
                let cache = cache_support::on_redis(backend).await.build().unwrap();
                let names = RedisBackend::connect(&url).await.unwrap();
                (cache, Queue::Redis { url, names })
            }
            #[cfg(feature = "postgres")]
            Self::Postgres => {
                let backend = lock_core::PostgresBackend::connect(&url).await.unwrap();
                let store = lock_core::sql::PostgresResultStore::connect(&url)
                    .await
                    .unwrap();
                let cache = Cache::builder(store, backend.clone())
                    .namespace(cache_support::NAMESPACE)
                    .build()
                    .unwrap();
                (cache, Queue::Postgres(backend))
            }
            #[cfg(not(feature = "postgres"))]
            Self::Postgres => panic!("the postgres feature is off"),
        }
    }
}

/// With the default settings, the process computing a cold key is killed (SIGKILL): a caller
/// waiting in another process takes over within the computation's short lease, computes, and
/// stores (the next read is a hit): two origin calls in all, the killed one's and its own.
async fn a_killed_computer_is_taken_over_and_the_value_stored(store: Store) {
    if std::env::var(CHILD_ENV).is_ok() || store.url().is_none() {
        return;
    }
    timeout(BOUND, async {
        let key = unique("takeover");
        let (here, queue) = store.instance().await;
        let role = format!("takeover-{}", store.name());
        let mut computer = start_child(&role, &key, "COMPUTING").await;
        let origin = Origin::default();
        let origin_time = Duration::from_secs(1);
        let waiter = tokio::spawn({
            let (here, key, origin) = (here.clone(), key.clone(), origin.clone());
            async move {
                here.entry(&key)
                    .try_get_with(move || origin.call(origin_time, "taken over"))
                    .await
                    .unwrap()
            }
        });
        cache_support::until_queued(|| queue.waiting(&key)).await;
        computer.process.kill().await.unwrap();
        let killed_at = Instant::now();
        let got = waiter.await.unwrap();
        let took = killed_at.elapsed();
        eprintln!("{store:?}: the value was stored {took:?} after the computer's kill");
        assert_got(&got, CacheStatus::Computed, b"taken over");
        let lease = lock_core::cache::DEFAULT_COMPUTE_LEASE.ttl();
        let slack = Duration::from_millis(1_500);
        assert!(took <= lease + origin_time + slack, "{took:?}");
        assert_eq!(
            origin.calls(),
            1,
            "the takeover's, beside the killed computer's"
        );
        let again = answer(&here, &key, b"unused").await;
        assert_got(&again, CacheStatus::Hit, b"taken over");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_computer_is_taken_over_and_the_value_stored_on_redis() {
    a_killed_computer_is_taken_over_and_the_value_stored(Store::Redis).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_computer_is_taken_over_and_the_value_stored_on_postgres() {
    a_killed_computer_is_taken_over_and_the_value_stored(Store::Postgres).await;
}

/// A computing process is paused (SIGSTOP) past its lease: a caller in another process takes
/// over and stores `new`; resumed, the paused one finishes computing `old`, and its store is
/// refused by the fencing token: `new` stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_computer_cannot_overwrite_the_value_that_took_over() {
    let store = Store::Redis;
    if std::env::var(CHILD_ENV).is_ok() || store.url().is_none() {
        return;
    }
    timeout(BOUND, async {
        let key = unique("paused");
        let (here, queue) = store.instance().await;
        let mut computer = start_child("paused-redis", &key, "COMPUTING").await;
        computer.signal("-STOP");
        let got = here
            .entry(&key)
            .try_get_with(|| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, String>(b"new".to_vec())
            })
            .await
            .unwrap();
        assert_got(&got, CacheStatus::Computed, b"new");
        assert_eq!(queue.waiting(&key).await, 0);
        computer.signal("-CONT");
        let done = computer.line_with("DONE").await;
        eprintln!("the paused computer, resumed: {done}");
        computer.process.wait().await.unwrap();
        let now = answer(&here, &key, b"unused").await;
        assert_eq!(
            (now.status, now.value.as_slice()),
            (CacheStatus::Hit, &b"new"[..]),
            "the paused computer overwrote the newer value"
        );
    })
    .await
    .expect("bounded");
}

/// 1,000 concurrent cold requests, 500 in each of two processes: one origin call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_requests_across_two_processes_call_the_origin_once() {
    let Some(url) = parent_url() else { return };
    timeout(BOUND, async {
        let key = unique("cold-2p");
        let here = cache(&url, LeaseMode::default()).await;
        let mut other = start_child("crowd", &key, "READY").await;
        let mut go = other.process.stdin.take().unwrap();
        go.write_all(b"GO\n").await.unwrap();
        let (computed_here, collapsed_here) = crowd_here(&here, &url, &key, 500).await;
        let done = other.line_with("DONE").await;
        let there: Vec<usize> = done[5..].split(' ').map(|n| n.parse().unwrap()).collect();
        assert_eq!(origin_calls(&url, &key).await, 1, "origin calls");
        assert_eq!(computed_here + there[0], 1, "callers that computed");
        assert_eq!(collapsed_here + there[1], 999);
        other.process.wait().await.unwrap();
    })
    .await
    .expect("bounded");
}

/// The process computing a key is killed (SIGKILL) mid-compute: a caller waiting in another
/// process takes over within the computation's lease and gets a value; nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_computing_process_hands_over_within_its_lease() {
    let Some(url) = parent_url() else { return };
    timeout(BOUND, async {
        let key = unique("killed");
        let here = cache(&url, LeaseMode::default()).await;
        let mut computer = start_child("computer", &key, "COMPUTING").await;
        let waiter = tokio::spawn({
            let (here, url, key) = (here.clone(), url.clone(), key.clone());
            async move {
                here.entry(&key)
                    .wait_at_most(Duration::from_secs(30))
                    .try_get_with(move || origin(url, key, Duration::from_millis(50)))
                    .await
                    .unwrap()
            }
        });
        let names = RedisBackend::connect(&url).await.unwrap();
        cache_support::until_queued(|| cache_support::redis_lease_waiters(&url, &names, &key))
            .await;
        computer.process.kill().await.unwrap();
        let killed_at = Instant::now();
        let got = waiter.await.unwrap();
        let took = killed_at.elapsed();
        eprintln!("killed computer: a waiter computed the value {took:?} after the kill");
        assert_eq!(got.status, CacheStatus::Computed);
        assert!(took < KILL_LEASE + Duration::from_secs(2), "{took:?}");
    })
    .await
    .expect("bounded");
}

/// Redis stopped: calls are still answered, computed without collapsing (fail open, said in the
/// status); Redis back: collapsing resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_open_and_collapsing_resumes() {
    if parent_url().is_none() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-cache-outage-{}", std::process::id()));
    let mut server = RedisServer::start(free_port(), dir);
    timeout(BOUND, async {
        let (a, b) = (
            cache(&server.url(), LeaseMode::default()).await,
            cache(&server.url(), LeaseMode::default()).await,
        );
        server.kill();
        let started = Instant::now();
        let open = answer(&a, "down", b"from origin").await;
        assert_got(&open, CacheStatus::FailOpen, b"from origin");
        eprintln!("fail open answered in {:?}", started.elapsed());
        assert!(started.elapsed() < Duration::from_secs(5));
        // Callers of one process still share one computation while the backend is down.
        let origin = Origin::default();
        let compute = {
            let origin = origin.clone();
            move || origin.call(Duration::from_millis(200), "v")
        };
        for got in crowd(std::slice::from_ref(&a), 20, "down-crowd", compute).await {
            assert_eq!(got.status, CacheStatus::FailOpen);
        }
        assert_eq!(origin.calls(), 1, "collapsed within the process");

        server.spawn();
        let deadline = Instant::now() + Duration::from_secs(20);
        // Until both clients have reconnected, calls may still fail open; then they collapse.
        loop {
            let origin = Origin::default();
            let compute = {
                let origin = origin.clone();
                move || origin.call(Duration::from_millis(200), "v")
            };
            let answers = crowd(&[a.clone(), b.clone()], 100, &unique("back"), compute).await;
            if answers
                .iter()
                .all(|got| got.status != CacheStatus::FailOpen)
            {
                assert_eq!(origin.calls(), 1, "collapsing resumed");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "still failing open 20 s after Redis came back"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("bounded");
}
