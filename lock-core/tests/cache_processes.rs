//! The stampede-protection cache across processes on a real Redis: a cold key hit by 1,000
//! callers in two processes calls the origin once; a computing process killed mid-compute
//! hands over within its lease; Redis down means fail open, and collapsing resumes when it is
//! back.
//!
//! The test binary starts itself again as the second process (`LOCK_TEST_CACHE_CHILD` set), as
//! the SQL kill tests do.
#![cfg(feature = "redis")]

mod redis_server;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lock_core::cache::{Cache, CacheStatus, RedisCacheStore};
use lock_core::{LeaseMode, RedisBackend};
use redis_server::{free_port, Server};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::time::{timeout, Instant};

const CHILD_ENV: &str = "LOCK_TEST_CACHE_CHILD";
const BOUND: Duration = Duration::from_secs(60);
/// The lease of a computation in the kill test: the time a killed computer can block others.
const KILL_LEASE: Duration = Duration::from_millis(1_500);

fn url() -> Option<String> {
    lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
}

async fn cache(url: &str, lease: LeaseMode) -> Cache {
    let backend = RedisBackend::builder(url)
        .response_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let store = RedisCacheStore::connect(&backend).await.unwrap();
    Cache::builder(store, backend)
        .namespace("test")
        .compute_lease(lease)
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

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}:{}:{nanos}", std::process::id())
}

/// `callers` concurrent reads of `key` on one cache; returns (computed, collapsed) counts.
async fn crowd(cache: &Cache, url: &str, key: &str, callers: usize) -> (usize, usize) {
    let mut tasks = Vec::new();
    for _ in 0..callers {
        let (cache, url, key) = (cache.clone(), url.to_owned(), key.to_owned());
        tasks.push(tokio::spawn(async move {
            cache
                .entry(&key)
                .try_get_with(move || origin(url, key, Duration::from_millis(400)))
                .await
                .unwrap()
                .status
        }));
    }
    let (mut computed, mut collapsed) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            CacheStatus::Computed => computed += 1,
            CacheStatus::Collapsed | CacheStatus::Hit => collapsed += 1,
            other => panic!("unexpected status {other:?}"),
        }
    }
    (computed, collapsed)
}

/// Starts this test binary as the second process in `role` for `key`.
fn child(role: &str, key: &str, test: &str) -> tokio::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{role}:{key}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Reads the child's stdout until a line holding `word` (libtest may print before it on the
/// same line); returns the line from `word` on.
async fn line_starting(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    word: &str,
) -> String {
    loop {
        let line = lines.next_line().await.unwrap().expect("child ended early");
        if let Some(at) = line.find(word) {
            return line[at..].to_owned();
        }
    }
}

/// Runs only as the second process (see the tests below); does nothing otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process() {
    let Ok(request) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (role, key) = request.split_once(':').unwrap();
    let url = url().unwrap();
    match role {
        "crowd" => {
            let cache = cache(&url, LeaseMode::default()).await;
            println!("READY");
            tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()))
                .await
                .unwrap()
                .unwrap();
            let (computed, collapsed) = crowd(&cache, &url, key, 500).await;
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
        other => panic!("unknown child role {other}"),
    }
}

/// 1,000 concurrent cold requests, 500 in each of two processes: one origin call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_requests_across_two_processes_call_the_origin_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let Some(url) = url() else { return };
    timeout(BOUND, async {
        let key = unique("cold-2p");
        let here = cache(&url, LeaseMode::default()).await;
        let mut other = child("crowd", &key, "child_process");
        let mut lines = BufReader::new(other.stdout.take().unwrap()).lines();
        line_starting(&mut lines, "READY").await;
        other
            .stdin
            .take()
            .unwrap()
            .write_all(b"GO\n")
            .await
            .unwrap();
        let (computed_here, collapsed_here) = crowd(&here, &url, &key, 500).await;
        let done = line_starting(&mut lines, "DONE").await;
        let there: Vec<usize> = done[5..].split(' ').map(|n| n.parse().unwrap()).collect();
        assert_eq!(origin_calls(&url, &key).await, 1, "origin calls");
        assert_eq!(computed_here + there[0], 1, "callers that computed");
        assert_eq!(collapsed_here + there[1], 999);
        other.wait().await.unwrap();
    })
    .await
    .expect("bounded");
}

/// The process computing a key is killed (SIGKILL) mid-compute: a caller waiting in another
/// process takes over within the computation's lease and gets a value; nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_computing_process_hands_over_within_its_lease() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let Some(url) = url() else { return };
    timeout(BOUND, async {
        let key = unique("killed");
        let here = cache(&url, LeaseMode::default()).await;
        let mut computer = child("computer", &key, "child_process");
        let mut lines = BufReader::new(computer.stdout.take().unwrap()).lines();
        line_starting(&mut lines, "COMPUTING").await;
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
        tokio::time::sleep(Duration::from_millis(200)).await; // the waiter queues
        computer.kill().await.unwrap();
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
    if std::env::var(CHILD_ENV).is_ok() || url().is_none() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-cache-outage-{}", std::process::id()));
    let mut server = Server::start(free_port(), dir);
    timeout(BOUND, async {
        let (a, b) = (
            cache(&server.url(), LeaseMode::default()).await,
            cache(&server.url(), LeaseMode::default()).await,
        );
        server.kill();
        let started = Instant::now();
        let open = a
            .entry("down")
            .try_get_with(|| async { Ok::<_, String>(b"from origin".to_vec()) })
            .await
            .unwrap();
        assert_eq!(
            (open.status, open.value.as_slice()),
            (CacheStatus::FailOpen, &b"from origin"[..])
        );
        eprintln!("fail open answered in {:?}", started.elapsed());
        assert!(started.elapsed() < Duration::from_secs(5));
        // Callers of one process still share one computation while the backend is down.
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (a, calls) = (a.clone(), calls.clone());
            tasks.push(tokio::spawn(async move {
                a.entry("down-crowd")
                    .try_get_with(move || async move {
                        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Ok::<_, String>(b"v".to_vec())
                    })
                    .await
                    .unwrap()
                    .status
            }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap(), CacheStatus::FailOpen);
        }
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "collapsed within the process"
        );

        server.spawn();
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let deadline = Instant::now() + Duration::from_secs(20);
        // Until both clients have reconnected, calls may still fail open; then they collapse.
        loop {
            let key = unique("back");
            calls.store(0, std::sync::atomic::Ordering::SeqCst);
            let mut tasks = Vec::new();
            for n in 0..100 {
                let cache = if n % 2 == 0 { a.clone() } else { b.clone() };
                let (key, calls) = (key.clone(), calls.clone());
                tasks.push(tokio::spawn(async move {
                    cache
                        .entry(&key)
                        .try_get_with(move || async move {
                            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            Ok::<_, String>(b"v".to_vec())
                        })
                        .await
                        .unwrap()
                        .status
                }));
            }
            let mut statuses = Vec::new();
            for task in tasks {
                statuses.push(task.await.unwrap());
            }
            if !statuses.contains(&CacheStatus::FailOpen) {
                assert_eq!(
                    calls.load(std::sync::atomic::Ordering::SeqCst),
                    1,
                    "collapsing resumed"
                );
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
