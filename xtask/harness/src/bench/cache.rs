//! The cache figures of `cargo xtask bench --backend redis`, each beside a floor measured in
//! the same run: a hit against a raw `GET` of the same bytes on the same kind of connection,
//! and a collapsed miss (100 waiters over two instances) against the origin's own time plus
//! two raw round trips, and against 100 tasks handed one computation in process (a tokio
//! `watch`, no cache) plus two raw round trips.

use std::time::Duration;

use lock_core::cache::{Cache, CacheStatus};
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::bench::floor::Summary;
use crate::micros;

/// Waiters on one cold key in the collapsed-miss figure.
pub const WAITERS: usize = 100;
/// The origin's time in the collapsed-miss figure.
pub const ORIGIN_TIME: Duration = Duration::from_millis(20);

/// A cache on Redis, and its store (whose keys the raw reads name).
async fn cache(url: &str) -> (Cache, RedisResultStore) {
    let backend = RedisBackend::connect(url).await.expect("connect");
    let store = RedisResultStore::from_backend(&backend)
        .await
        .expect("cache store");
    let cache = Cache::builder(store.clone(), backend)
        .namespace(format!("bench-cache-{}", std::process::id()))
        .build()
        .expect("cache");
    (cache, store)
}

/// Measures both figures, prints them and returns them for the JSON report.
pub async fn run(url: &str, iterations: usize) -> Value {
    let ((a, store), (b, _)) = (cache(url).await, cache(url).await);
    let client = redis::Client::open(url).expect("url");
    let mut raw = client
        .get_connection_manager()
        .await
        .expect("raw connection");
    let payload = vec![b'x'; 512];

    // 1. A hit: the cache's read against a raw GET of the very bytes it stores.
    let key = "hot";
    let value = payload.clone();
    a.entry(key)
        .fresh_for(Duration::from_secs(3600))
        .try_get_with(move || async move { Ok::<_, String>(value) })
        .await
        .expect("fill");
    let redis_key = store.redis_key(&format!("{}:{key}", a.namespace()));
    let mut hits = Vec::with_capacity(iterations);
    let mut gets = Vec::with_capacity(iterations);
    for round in 0..iterations * 2 {
        // Interleaved, so both see the same machine.
        let start = Instant::now();
        if round % 2 == 0 {
            let hit = a
                .entry(key)
                .try_get_with(|| async { Err::<Vec<u8>, _>("a hit never computes") })
                .await
                .expect("hit");
            assert_eq!(hit.status, CacheStatus::Hit);
            hits.push(start.elapsed());
        } else {
            let bytes: Vec<u8> = redis::cmd("GET")
                .arg(&redis_key)
                .query_async(&mut raw)
                .await
                .expect("raw GET");
            assert!(bytes.len() > payload.len());
            gets.push(start.elapsed());
        }
    }
    let hit = Summary::of(&mut hits);
    let get = Summary::of(&mut gets);
    let hit_ratio = hit.mean.as_secs_f64() / get.mean.as_secs_f64();
    println!(
        "\ncache hit (512 B)                mean {:>10}  p50 {:>10}  p99 {:>10}",
        micros(hit.mean),
        micros(hit.p50),
        micros(hit.p99)
    );
    println!(
        "  floor: raw GET of the same bytes  mean {:>10}  p50 {:>10}  p99 {:>10}  ratio {hit_ratio:.2}× (mean)",
        micros(get.mean),
        micros(get.p50),
        micros(get.p99)
    );

    // 2. A collapsed miss: 100 waiters over two instances on a cold key; each waiter's time
    //    against the origin's time plus two raw round trips.
    let mut rounds = Vec::new();
    let mut origin_times = Vec::new();
    for round in 0..10 {
        let key = format!("cold:{round}");
        let start = Instant::now();
        let mut tasks = Vec::with_capacity(WAITERS);
        for n in 0..WAITERS {
            let cache = if n % 2 == 0 { a.clone() } else { b.clone() };
            let (key, payload) = (key.clone(), payload.clone());
            tasks.push(tokio::spawn(async move {
                let got = cache
                    .entry(&key)
                    .try_get_with(move || async move {
                        tokio::time::sleep(ORIGIN_TIME).await;
                        Ok::<_, String>(payload)
                    })
                    .await
                    .expect("collapsed miss");
                (start.elapsed(), got)
            }));
        }
        for task in tasks {
            let (took, got) = task.await.expect("waiter");
            assert!(matches!(
                got.status,
                CacheStatus::Computed | CacheStatus::Collapsed
            ));
            if got.status == CacheStatus::Computed {
                origin_times.push(got.computed_in);
            }
            rounds.push(took);
        }
    }
    let waited = Summary::of(&mut rounds);
    let scheduling = in_process_floor().await;
    // The origin's own time as measured in this run (a 20 ms sleep takes a little longer).
    let origin = Summary::of(&mut origin_times).mean;
    let target = origin + get.mean * 2;
    let miss_ratio = waited.p99.as_secs_f64() / target.as_secs_f64();
    // The floor: the in-process hand-off (its p99) plus two raw round trips.
    let handed = scheduling.p99 + get.mean * 2;
    let handed_ratio = waited.p99.as_secs_f64() / handed.as_secs_f64();
    println!(
        "collapsed miss, {WAITERS} waiters       p50 {:>10}  p99 {:>10}  (10 cold keys, origin sleeps {}, measured {})",
        micros(waited.p50),
        micros(waited.p99),
        micros(ORIGIN_TIME),
        micros(origin)
    );
    println!(
        "  floor: origin (measured) + 2 × raw GET {:>10}     ratio {miss_ratio:.2}× (p99)",
        micros(target)
    );
    println!(
        "  floor: {WAITERS} tasks handed one {} computation in-process (tokio watch)  p50 {:>10}  p99 {:>10}",
        micros(ORIGIN_TIME),
        micros(scheduling.p50),
        micros(scheduling.p99)
    );
    println!(
        "    its p99 + 2 × raw GET        {:>10}     ratio {handed_ratio:.2}× (p99)",
        micros(handed)
    );
    json!({
        "in_process_floor_us": { "p50": scheduling.p50.as_secs_f64() * 1e6, "p99": scheduling.p99.as_secs_f64() * 1e6 },
        "hit_us": { "mean": hit.mean.as_secs_f64() * 1e6, "p50": hit.p50.as_secs_f64() * 1e6, "p99": hit.p99.as_secs_f64() * 1e6 },
        "raw_get_us": { "mean": get.mean.as_secs_f64() * 1e6, "p99": get.p99.as_secs_f64() * 1e6 },
        "hit_ratio": hit_ratio,
        "collapsed_miss_us": { "p50": waited.p50.as_secs_f64() * 1e6, "p99": waited.p99.as_secs_f64() * 1e6 },
        "collapsed_miss_target_us": target.as_secs_f64() * 1e6,
        "collapsed_miss_ratio": miss_ratio,
        "collapsed_miss_in_process_target_us": handed.as_secs_f64() * 1e6,
        "collapsed_miss_in_process_ratio": handed_ratio,
    })
}

/// What 100 tasks waiting for one computation cost on this machine with no cache at all: a
/// tokio `watch` channel, 10 rounds, each task timed from before the spawns as above.
async fn in_process_floor() -> Summary {
    let mut times = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let (sender, receiver) = tokio::sync::watch::channel(None::<Vec<u8>>);
        let mut tasks = Vec::with_capacity(WAITERS);
        for _ in 0..WAITERS {
            let mut receiver = receiver.clone();
            tasks.push(tokio::spawn(async move {
                receiver
                    .wait_for(Option::is_some)
                    .await
                    .expect("sender kept");
                start.elapsed()
            }));
        }
        tokio::time::sleep(ORIGIN_TIME).await;
        sender.send_replace(Some(vec![b'x'; 512]));
        for task in tasks {
            times.push(task.await.expect("waiter"));
        }
    }
    Summary::of(&mut times)
}
