//! `cargo xtask bench --backend memory|redis`: lock throughput and latency, each beside a raw
//! floor measured in the same run, with the ratio.
//!
//! Floors: on Redis, one `EVALSHA` of a script that returns at once, on the same kind of
//! connection the backend uses (and its concurrent throughput); on memory, a
//! `tokio::sync::Mutex` (uncontended pair, 64 concurrent, handoff to a waiter). Results are
//! printed and written as JSON under `target/bench/`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_core::{LockClient, MemoryBackend};
use lock_harness::{
    connect, micros, redis_url, usage_error, BackendKind, Connected, Flags, Percentiles,
};
use serde_json::json;
use tokio::time::Instant;

const CONCURRENT_TASKS: usize = 64;
const HANDOFF_WAITERS: usize = 16;

#[tokio::main]
async fn main() {
    let flags = Flags::parse(
        std::env::args().skip(1),
        &["backend", "iterations", "redis-url", "seconds"],
    )
    .unwrap_or_else(|e| usage_error(&e));
    let kind = flags.backend().unwrap_or_else(|e| usage_error(&e));
    let iterations = flags
        .number("iterations", 3000)
        .unwrap_or_else(|e| usage_error(&e))
        .max(10) as usize;
    let seconds = flags
        .number("seconds", 2)
        .unwrap_or_else(|e| usage_error(&e))
        .max(1);
    let window = Duration::from_secs(seconds);
    let url = redis_url(&flags);
    let namespace = format!("bench-{}", std::process::id());
    let memory = MemoryBackend::new();
    let connected = connect(kind, &url, &namespace, &memory)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot connect: {e}")));
    let floor = match kind {
        BackendKind::Redis => Floor::Redis(RedisFloor::connect(&url).await),
        BackendKind::Memory => Floor::Memory,
        BackendKind::Zookeeper | BackendKind::Etcd | BackendKind::Postgres | BackendKind::Mysql => {
            usage_error(&format!(
                "bench has no raw floor for {} yet; use `cargo xtask stress --backend {}`",
                kind.name(),
                kind.name()
            ))
        }
    };
    println!(
        "bench: {} backend, {iterations} iterations, {seconds} s windows\n",
        kind.name()
    );

    // Warm up connections, scripts, the watchdog driver and the allocator before measuring.
    floor.sequential(200).await;
    for i in 0..200 {
        let guard = connected
            .locks
            .lock(format!("warm:{i}"))
            .await
            .expect("acquire");
        guard.release().await.expect("release");
    }

    // 1. Uncontended acquire + release, one task.
    let floor_single = floor.sequential(iterations).await;
    let mut pairs = Vec::with_capacity(iterations);
    for i in 0..iterations {
        let key = format!("solo:{}", i % 64);
        let start = Instant::now();
        let guard = connected.locks.lock(&key).await.expect("acquire");
        guard.release().await.expect("release");
        pairs.push(start.elapsed());
    }
    let mean_pair = mean(&pairs);
    let lock_single = Percentiles::of(&mut pairs);
    let floor_pair = floor.pair_of(floor_single.mean);
    let uncontended_ratio = ratio(mean_pair, floor_pair);
    println!(
        "uncontended acquire+release      mean {:>10}  p50 {:>10}  p99 {:>10}  {:>8.0} ops/s",
        micros(mean_pair),
        micros(lock_single.p50),
        micros(lock_single.p99),
        1.0 / mean_pair.as_secs_f64()
    );
    println!("  floor: {:<24}mean {:>10}  p50 {:>10}  p99 {:>10}  ratio {uncontended_ratio:.2}× (mean vs floor)",
        floor.pair_name(), micros(floor_pair), micros(floor.pair_of(floor_single.p50)), micros(floor.pair_of(floor_single.p99)));

    // 2. 64 tasks on distinct keys.
    let floor_rate = floor.concurrent(window).await;
    let lock_rate = concurrent_pairs(&connected.locks, window).await;
    let floor_pair_rate = floor.pair_rate(floor_rate);
    let concurrent_ratio = lock_rate / floor_pair_rate;
    println!(
        "\n{CONCURRENT_TASKS} tasks, distinct keys        {lock_rate:>10.0} acquire+release/s"
    );
    println!("  floor: {:<24}{floor_pair_rate:>10.0} /s  ({floor_rate:.0} raw ops/s)  ratio {concurrent_ratio:.2}×",
        floor.rate_name());

    // 3. Handoff under 16-way contention on one key, with round trips per acquisition.
    let floor_handoff = floor.handoff(iterations).await;
    let commands_before = connected
        .redis
        .as_ref()
        .map(lock_core::RedisBackend::commands_sent);
    let stats_before = floor.script_calls().await;
    let (mut handoffs, acquisitions) = handoff(&connected, iterations).await;
    let lock_handoff = Percentiles::of(&mut handoffs);
    let handoff_ratio = ratio(lock_handoff.p50, floor_handoff.p50);
    println!("\nhandoff, {HANDOFF_WAITERS} waiters on one key     p50 {:>10}  p99 {:>10}  ({acquisitions} acquisitions)",
        micros(lock_handoff.p50), micros(lock_handoff.p99));
    println!(
        "  floor: {:<24}p50 {:>10}  p99 {:>10}  ratio {handoff_ratio:.2}× (p50)",
        floor.handoff_name(),
        micros(floor_handoff.p50),
        micros(floor_handoff.p99)
    );
    let mut round_trips = json!(null);
    if let (Some(before), Some(redis)) = (commands_before, connected.redis.as_ref()) {
        let sent = redis.commands_sent() - before;
        let per_acquisition = sent as f64 / acquisitions as f64;
        let server = floor
            .script_calls()
            .await
            .zip(stats_before)
            .map(|(after, before)| after - before);
        println!("  client round trips per acquisition (acquire attempts + release): {per_acquisition:.2}  \
                  [client counted {sent}; server INFO commandstats evalsha+eval: {}]",
            server.map_or("n/a".into(), |s| s.to_string()));
        round_trips = json!({ "per_acquisition": per_acquisition, "client_commands": sent, "server_script_calls": server });
    }

    // 4. What #[distributed_lock] costs over the same calls by hand (memory backend).
    let macro_ratio = macro_overhead(iterations).await;
    println!("\n#[distributed_lock] vs the same calls by hand (memory): ratio {macro_ratio:.3}× (median of 9 rounds)");

    let report = json!({
        "macro_overhead_ratio": macro_ratio,
        "backend": kind.name(),
        "iterations": iterations,
        "uncontended": { "mean_us": us(mean_pair), "p50_us": us(lock_single.p50), "p99_us": us(lock_single.p99),
                         "floor_mean_us": us(floor_pair), "floor": floor.pair_name(), "ratio": uncontended_ratio },
        "concurrent": { "tasks": CONCURRENT_TASKS, "pairs_per_s": lock_rate, "floor_pairs_per_s": floor_pair_rate,
                        "floor_raw_ops_per_s": floor_rate, "ratio": concurrent_ratio },
        "handoff": { "waiters": HANDOFF_WAITERS, "p50_us": us(lock_handoff.p50), "p99_us": us(lock_handoff.p99),
                     "floor_p50_us": us(floor_handoff.p50), "floor_p99_us": us(floor_handoff.p99), "ratio_p50": handoff_ratio,
                     "round_trips": round_trips },
    });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).ok();
    let path = dir.join(format!("{}.json", kind.name()));
    match std::fs::write(
        &path,
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    ) {
        Ok(()) => println!("\nwritten: {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

/// Median over alternating rounds of (macro time / hand-written time) on the memory backend.
async fn macro_overhead(iterations: usize) -> f64 {
    use lock_harness::overhead::{annotated, by_hand};
    let locks = LockClient::new(MemoryBackend::new());
    let mut ratios = Vec::new();
    for round in 0..10 {
        let start = Instant::now();
        for i in 0..iterations as u64 {
            by_hand(&locks, i % 64).await.expect("by hand");
        }
        let hand = start.elapsed();
        let start = Instant::now();
        for i in 0..iterations as u64 {
            annotated(&locks, i % 64).await.expect("annotated");
        }
        let annotated_time = start.elapsed();
        if round > 0 {
            ratios.push(annotated_time.as_secs_f64() / hand.as_secs_f64());
        }
    }
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

fn mean(samples: &[Duration]) -> Duration {
    samples.iter().sum::<Duration>() / samples.len().max(1) as u32
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Acquire+release pairs per second from 64 tasks, each on its own key.
async fn concurrent_pairs(locks: &LockClient, window: Duration) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + window;
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENT_TASKS)
        .map(|t| {
            let (locks, done) = (locks.clone(), done.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    let guard = locks.lock(format!("wide:{t}")).await.expect("acquire");
                    guard.release().await.expect("release");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("bench task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Handoff latencies (release called → next holder returns from acquire) with 16 tasks
/// looping on one key; returns them and the number of acquisitions.
async fn handoff(connected: &Connected, target: usize) -> (Vec<Duration>, u64) {
    let released_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let samples: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let acquisitions = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..HANDOFF_WAITERS)
        .map(|_| {
            let (locks, released_at, samples, acquisitions) = (
                connected.locks.clone(),
                released_at.clone(),
                samples.clone(),
                acquisitions.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let guard = locks.lock("handoff").await.expect("acquire");
                    let now = Instant::now();
                    acquisitions.fetch_add(1, Ordering::Relaxed);
                    let enough = {
                        let mut samples = samples
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        if let Some(at) = released_at
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .take()
                        {
                            samples.push(now - at);
                        }
                        samples.len() >= target
                    };
                    *released_at
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
                    guard.release().await.expect("release");
                    if enough {
                        return;
                    }
                }
            })
        })
        .collect();
    // The first task to see `enough` stops; the others stop when they next get the lock.
    for task in tasks {
        task.await.expect("handoff task");
    }
    let samples = std::mem::take(
        &mut *samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    (samples, acquisitions.load(Ordering::Relaxed))
}

/// The raw floor every figure is compared with.
enum Floor {
    Redis(RedisFloor),
    Memory,
}

struct RedisFloor {
    connection: redis::aio::ConnectionManager,
    admin: redis::aio::MultiplexedConnection,
    script: redis::Script,
}

impl RedisFloor {
    async fn connect(url: &str) -> Self {
        let client = redis::Client::open(url)
            .unwrap_or_else(|e| usage_error(&format!("bad Redis URL: {e}")));
        let mut connection = client
            .get_connection_manager()
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot reach Redis at {url}: {e}")));
        let admin = client
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        let script = redis::Script::new("return 1");
        script
            .prepare_invoke()
            .load_async(&mut connection)
            .await
            .expect("load floor script");
        Self {
            connection,
            admin,
            script,
        }
    }

    async fn evalsha(&self) {
        let _: i64 = self
            .script
            .invoke_async(&mut self.connection.clone())
            .await
            .expect("floor EVALSHA");
    }
}

struct Summary {
    mean: Duration,
    p50: Duration,
    p99: Duration,
}

impl Floor {
    fn pair_name(&self) -> &'static str {
        match self {
            Self::Redis(_) => "2 × EVALSHA round trip",
            Self::Memory => "tokio Mutex lock+unlock",
        }
    }

    fn rate_name(&self) -> &'static str {
        match self {
            Self::Redis(_) => "½ × raw EVALSHA/s",
            Self::Memory => "tokio Mutex pairs/s",
        }
    }

    fn handoff_name(&self) -> &'static str {
        match self {
            Self::Redis(_) => "4 × EVALSHA round trip",
            Self::Memory => "tokio Mutex handoff",
        }
    }

    /// A lock pair costs two round trips on Redis, one mutex pair on memory.
    fn pair_of(&self, single: Duration) -> Duration {
        match self {
            Self::Redis(_) => single * 2,
            Self::Memory => single,
        }
    }

    fn pair_rate(&self, raw: f64) -> f64 {
        match self {
            Self::Redis(_) => raw / 2.0,
            Self::Memory => raw,
        }
    }

    /// One raw operation (a round trip, or a mutex pair), `n` times in sequence.
    async fn sequential(&self, n: usize) -> Summary {
        let mut samples = Vec::with_capacity(n);
        let mutex = tokio::sync::Mutex::new(0u64);
        for _ in 0..n {
            let start = Instant::now();
            match self {
                Self::Redis(redis) => redis.evalsha().await,
                Self::Memory => *mutex.lock().await += 1,
            }
            samples.push(start.elapsed());
        }
        let mean = mean(&samples);
        let p = Percentiles::of(&mut samples);
        Summary {
            mean,
            p50: p.p50,
            p99: p.p99,
        }
    }

    /// Raw operations per second from 64 tasks.
    async fn concurrent(&self, window: Duration) -> f64 {
        let done = Arc::new(AtomicU64::new(0));
        let until = Instant::now() + window;
        let started = Instant::now();
        let mutexes: Arc<Vec<tokio::sync::Mutex<u64>>> =
            Arc::new((0..CONCURRENT_TASKS).map(|_| Default::default()).collect());
        let redis = match self {
            Self::Redis(redis) => Some((redis.connection.clone(), redis.script.clone())),
            Self::Memory => None,
        };
        let tasks: Vec<_> = (0..CONCURRENT_TASKS)
            .map(|t| {
                let (done, mutexes, redis) = (done.clone(), mutexes.clone(), redis.clone());
                tokio::spawn(async move {
                    while Instant::now() < until {
                        match &redis {
                            Some((connection, script)) => {
                                let _: i64 = script
                                    .invoke_async(&mut connection.clone())
                                    .await
                                    .expect("floor EVALSHA");
                            }
                            None => *mutexes[t].lock().await += 1,
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("floor task");
        }
        done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
    }

    /// Redis: 4 × a sequential round trip (the budget for a handoff). Memory: the
    /// handoff latency of a tokio Mutex with 16 waiters.
    async fn handoff(&self, n: usize) -> Summary {
        match self {
            Self::Redis(_) => {
                let single = self.sequential(n.min(1000)).await;
                Summary {
                    mean: single.mean * 4,
                    p50: single.p50 * 4,
                    p99: single.p99 * 4,
                }
            }
            Self::Memory => {
                let mutex = Arc::new(tokio::sync::Mutex::new(None::<Instant>));
                let samples: Arc<Mutex<Vec<Duration>>> = Arc::default();
                let tasks: Vec<_> = (0..HANDOFF_WAITERS)
                    .map(|_| {
                        let (mutex, samples) = (mutex.clone(), samples.clone());
                        tokio::spawn(async move {
                            loop {
                                let mut released_at = mutex.lock().await;
                                let now = Instant::now();
                                let mut samples = samples
                                    .lock()
                                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                                if let Some(at) = released_at.take() {
                                    samples.push(now - at);
                                }
                                if samples.len() >= n {
                                    return;
                                }
                                drop(samples);
                                *released_at = Some(Instant::now());
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("floor handoff task");
                }
                let mut samples = std::mem::take(
                    &mut *samples
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                );
                let mean = mean(&samples);
                let p = Percentiles::of(&mut samples);
                Summary {
                    mean,
                    p50: p.p50,
                    p99: p.p99,
                }
            }
        }
    }

    /// EVALSHA + EVAL calls the server has counted (`INFO commandstats`).
    async fn script_calls(&self) -> Option<u64> {
        let Self::Redis(redis) = self else {
            return None;
        };
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut redis.admin.clone())
            .await
            .ok()?;
        let calls = |name: &str| {
            info.lines()
                .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
                .and_then(|l| l.split("calls=").nth(1))
                .and_then(|rest| rest.split(',').next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Some(calls("evalsha") + calls("eval"))
    }
}
