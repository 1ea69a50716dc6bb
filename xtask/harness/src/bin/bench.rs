//! `cargo xtask bench --backend memory|redis|postgres|mysql|zookeeper|etcd|redlock`: lock
//! throughput and latency, each beside a raw floor measured in the same run, with the ratio.
//! `redlock` has figures of its own (`lock_harness::bench::redlock`): a 3-node RedLock's cycle
//! against one node's (`redlock/single`), and five nodes with 2, then 3, stalled.
//!
//! Floors (see `lock_harness::bench::floor`): on each server, its cheapest operation on the same kind
//! of client the backend uses (Redis `EVALSHA` of `return 1`; PostgreSQL and MySQL `SELECT 1` on
//! a sqlx pool; ZooKeeper create+delete of an ephemeral node; etcd one txn), sequentially and
//! from 64 tasks; on memory, a `tokio::sync::Mutex` (uncontended pair, 64 concurrent, handoff to
//! a waiter). Results are printed and written as JSON under `target/bench/`.
//!
//! `--load` runs every figure with a busy process on every core beside it
//! (`lock_harness::bench::busy_cores`): the floors are measured under the same load, so the ratios are
//! the loaded ones.
//!
//! `--only fair` (with `--backend redis`) runs only the fair lock vs lock figure
//! (`lock_harness::bench::fair`), written to `target/bench/fair.json`; `--only uncontended` only
//! the first figure (acquire+release on one task, rslock beside it on Redis), for a profiler
//! (`perf record -g target/release/bench --backend redis --only uncontended --iterations 50000`);
//! `--only cache-layer` the response cache layer's hit against the hand-written GET layer;
//! `--only idempotency` the idempotency layer's first request and replay; `--only operator`
//! what the operator's calls cost on the backend (`lock_harness::bench::operator`: inspect, a
//! forced release, a listing page, beside the lock's own cycle).
//!
//! On `postgres` and `mysql` the run ends with the SQL stock strategies' deductions/s on one
//! SKU at 1, 8 and 64 buyers, beside Redis's atomic stock script (`lock_harness::bench::stock`);
//! `--only stock` runs only those.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use example_support::backend::{redis_url, BackendKind};
use example_support::flags::{usage_error, Flags};
use lock_core::{LockClient, MemoryBackend};
use lock_harness::bench::cpu;
use lock_harness::bench::floor::{
    concurrent_pairs, EtcdFloor, Floor, MemoryFloor, RedisFloor, SqlFloor, Summary, ZooKeeperFloor,
    CONCURRENT_TASKS, HANDOFF_WAITERS,
};
use lock_harness::{connect, micros, Connected, Percentiles};
use serde_json::json;
use tokio::time::Instant;

#[tokio::main]
async fn main() {
    let flags = Flags::parse(
        std::env::args().skip(1),
        &[
            "backend",
            "iterations",
            "redis-url",
            "seconds",
            "only",
            "load",
        ],
    )
    .unwrap_or_else(|e| usage_error(&e));
    let kind = flags.backend().unwrap_or_else(|e| usage_error(&e));
    let load = match flags.get("load") {
        None | Some("false") => None,
        Some("true") => {
            let load = lock_harness::bench::busy_cores::BusyCores::start();
            println!("load: {} busy processes beside the bench (one per core); floors and figures both run under it\n", load.count());
            Some(load)
        }
        Some(other) => usage_error(&format!("--load takes no value (got {other:?})")),
    };
    let iterations = flags
        .number("iterations", 3000)
        .unwrap_or_else(|e| usage_error(&e))
        .max(10) as usize;
    match flags.get("only") {
        None => {}
        Some("fair") if kind == BackendKind::Redis => {
            let report = lock_harness::bench::fair::run(&redis_url(&flags)).await;
            write_report(&report_name("fair", load.is_some()), &report);
            return;
        }
        Some("fair") => usage_error("--only fair runs on Redis: add --backend redis"),
        Some("uncontended" | "operator") => {}
        Some("cache-layer") if kind == BackendKind::Redis => {
            let report = lock_harness::bench::middleware::run(&redis_url(&flags), iterations).await;
            write_report(&report_name("cache-layer", load.is_some()), &report);
            return;
        }
        Some("cache-layer") => usage_error("--only cache-layer runs on Redis: add --backend redis"),
        Some("idempotency") if kind == BackendKind::Redis => {
            let report =
                lock_harness::bench::idempotency::run(&redis_url(&flags), iterations).await;
            write_report(&report_name("idempotency", load.is_some()), &report);
            return;
        }
        Some("idempotency") => {
            usage_error("--only idempotency runs on Redis: add --backend redis")
        }
        Some("stock") => match sql_name(kind) {
            Some((db, url)) => {
                let report = lock_harness::bench::stock::run(db, &url, &redis_url(&flags)).await;
                write_report(&report_name("stock", load.is_some()), &report);
                return;
            }
            None => usage_error("--only stock runs on PostgreSQL or MySQL: add --backend postgres or mysql"),
        },
        Some(other) => usage_error(&format!(
            "--only {other:?}: the filters are `fair`, `uncontended`, `operator`, `cache-layer`, `idempotency` and `stock`"
        )),
    }
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
    if flags.get("only") == Some("operator") {
        let rounds = iterations.min(500);
        let report =
            lock_harness::bench::operator::run(&connected.locks, kind.name(), rounds).await;
        write_report(
            &report_name(&format!("operator-{}", kind.name()), load.is_some()),
            &report,
        );
        return;
    }
    let run = Run {
        kind,
        connected,
        iterations,
        window,
        url: url.clone(),
        loaded: load.is_some(),
        only_uncontended: flags.get("only") == Some("uncontended"),
    };
    match kind {
        BackendKind::Memory => run.bench(MemoryFloor::default()).await,
        BackendKind::Redis => run.bench(RedisFloor::connect(&url).await).await,
        BackendKind::Postgres | BackendKind::Mysql => {
            let floor = if kind == BackendKind::Postgres {
                SqlFloor::postgres().await
            } else {
                SqlFloor::mysql().await
            };
            let (loaded, only_uncontended) = (run.loaded, run.only_uncontended);
            run.bench(floor).await;
            // The stock strategies of the same database, beside Redis's atomic script.
            if !only_uncontended {
                if let Some((db, sql_url)) = sql_name(kind) {
                    let report = lock_harness::bench::stock::run(db, &sql_url, &url).await;
                    write_report(&report_name(&format!("stock-{db}"), loaded), &report);
                }
            }
        }
        BackendKind::Zookeeper => run.bench(ZooKeeperFloor::connect().await).await,
        BackendKind::Etcd => run.bench(EtcdFloor::connect().await).await,
        // The cluster's own figures: its 64-task rate against one Redis's, and the CPU per
        // operation.
        BackendKind::RedisCluster => {
            let urls = example_support::backend::redis_cluster_urls();
            let report = lock_harness::bench::cluster::run(&url, &urls, window).await;
            write_report(&report_name("redis-cluster", run.loaded), &report);
        }
        // Under Sentinel the lock runs on one primary, as on one Redis: the figures of its own
        // are what replication acknowledgement costs.
        BackendKind::RedisSentinel => {
            let sets = lock_harness::bench::acknowledgement::Sets {
                sentinels: example_support::backend::redis_sentinel_urls(),
                service: example_support::backend::redis_sentinel_service(),
                secure: std::env::var("LOCK_TEST_REDIS_SECURE_SENTINEL_URL")
                    .ok()
                    .zip(std::env::var("LOCK_TEST_REDIS_SECURE_CA").ok())
                    .map(
                        |(sentinel, ca_file)| lock_harness::bench::acknowledgement::Secure {
                            sentinel,
                            service: std::env::var("LOCK_TEST_REDIS_SECURE_SERVICE")
                                .unwrap_or_else(|_| "lock-secure".to_owned()),
                            ca_file,
                        },
                    ),
            };
            let report = lock_harness::bench::acknowledgement::run(sets).await;
            write_report(&report_name("redis-sentinel", run.loaded), &report);
        }
        // RedLock's own figures: against one node, and its nodes stalled.
        BackendKind::Redlock => {
            let urls = example_support::backend::redlock_urls();
            let report = lock_harness::bench::redlock::run(&urls, iterations).await;
            write_report(&report_name("redlock", run.loaded), &report);
        }
    }
}

/// One bench run: the backend under test and the run's settings.
struct Run {
    kind: BackendKind,
    connected: Connected,
    iterations: usize,
    window: Duration,
    /// The Redis URL (the cache figures run on Redis).
    url: String,
    /// Whether busy processes run beside the bench (`--load`).
    loaded: bool,
    /// `--only uncontended`: the first figure alone (for a profiler).
    only_uncontended: bool,
}

impl Run {
    /// Measures every figure beside `floor`, prints them and writes the JSON report.
    async fn bench<F: Floor>(self, floor: F) {
        let Self {
            kind,
            connected,
            iterations,
            window,
            url,
            loaded,
            only_uncontended,
        } = self;
        println!(
            "bench: {} backend, {iterations} iterations, {} s windows\n",
            kind.name(),
            window.as_secs()
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

        // 1. Uncontended acquire + release, one task: the floor, the lock and (on Redis) rslock
        // in alternating rounds, so a neighbour's burst on a shared machine lands on all of
        // them alike; the ratios are medians of the rounds' ratios.
        let rslock_manager = (kind == BackendKind::Redis)
            .then(|| lock_harness::bench::rslock_compare::manager(&url));
        // The floor of the lock's own server work: its scripts called raw (Redis only).
        let raw_scripts = if kind == BackendKind::Redis {
            Some(lock_harness::bench::raw_scripts::RawScripts::connect(&url).await)
        } else {
            None
        };
        let mut raw_rounds = Vec::new();
        if let Some(manager) = &rslock_manager {
            lock_harness::bench::rslock_compare::warm_up(manager).await;
        }
        let per_round = (iterations / UNCONTENDED_ROUNDS).max(1);
        let (mut floor_rounds, mut lock_rounds, mut rslock_rounds) = (vec![], vec![], vec![]);
        for round in 0..UNCONTENDED_ROUNDS {
            if let Some(raw) = &raw_scripts {
                raw_rounds.push(raw.cycles(per_round).await);
            }
            for turn in 0..3 {
                match (round + turn) % 3 {
                    0 => floor_rounds.push(
                        floor
                            .sequential(per_round)
                            .await
                            .times(floor.ops_per_pair()),
                    ),
                    1 => lock_rounds.push(lock_cycles(&connected.locks, per_round).await),
                    _ => {
                        if let Some(manager) = &rslock_manager {
                            rslock_rounds.push(
                                lock_harness::bench::rslock_compare::cycles(manager, per_round)
                                    .await,
                            );
                        }
                    }
                }
            }
        }
        let floor_pairs = RoundFigures::of(&floor_rounds);
        let lock_single = RoundFigures::of(&lock_rounds);
        let floor_single = RoundFigures::of(&floor_rounds).per_op(floor.ops_per_pair());
        let mean_pair = lock_single.mean;
        let floor_pair = floor_pairs.mean;
        let uncontended_ratio = median_ratio(&lock_rounds, &floor_rounds);
        println!(
            "uncontended acquire+release      mean {:>10}  p50 {:>10}  p99 {:>10}  {:>8.0} ops/s  (medians of {UNCONTENDED_ROUNDS} alternating rounds)",
            micros(mean_pair),
            micros(lock_single.p50),
            micros(lock_single.p99),
            1.0 / mean_pair.as_secs_f64()
        );
        println!("  floor: {:<26}mean {:>10}  p50 {:>10}  p99 {:>10}  ratio {uncontended_ratio:.2}× (mean vs floor, median of the rounds')",
            floor.pair_name(), micros(floor_pair), micros(floor_pairs.p50), micros(floor_pairs.p99));
        // Beside another Rust lock crate on the same server, in the same run (Redis only).
        let mut rslock = json!(null);
        if !rslock_rounds.is_empty() {
            let theirs = RoundFigures::of(&rslock_rounds);
            // Cycles/s, ours over theirs: above 1 is faster.
            let speed = median_ratio(&rslock_rounds, &lock_rounds);
            println!("  rslock (SET NX PX + Lua del)     mean {:>10}  p50 {:>10}  p99 {:>10}  lock-core at {speed:.2}× rslock's cycles/s (median of the rounds')",
                micros(theirs.mean), micros(theirs.p50), micros(theirs.p99));
            rslock = json!({ "mean_us": us(theirs.mean), "p50_us": us(theirs.p50), "p99_us": us(theirs.p99),
                             "lock_core_cycles_per_s_ratio": speed });
        }
        // Against the same scripts called raw: what the library costs beyond its server work.
        let mut raw_scripts_floor = json!(null);
        if !raw_rounds.is_empty() {
            let raw = RoundFigures::of(&raw_rounds);
            let raw_ratio = median_ratio(&lock_rounds, &raw_rounds);
            println!("  floor: the same scripts, raw     mean {:>10}  p50 {:>10}  p99 {:>10}  ratio {raw_ratio:.2}× (mean vs floor, median of the rounds'; goal ≤ 1.05)",
                micros(raw.mean), micros(raw.p50), micros(raw.p99));
            raw_scripts_floor = json!({ "mean_us": us(raw.mean), "p50_us": us(raw.p50), "p99_us": us(raw.p99),
                                "ratio": raw_ratio });
        }
        if only_uncontended {
            return;
        }

        // 2. 64 tasks on distinct keys.
        let server = [url.clone()];
        let is_redis = kind == BackendKind::Redis;
        let stats_start = floor.script_stats().await;
        let (client_0, server_0) = (
            cpu::process_seconds(),
            if is_redis {
                cpu::redis_seconds(&server).await
            } else {
                0.0
            },
        );
        let floor_rate = floor.concurrent(window).await;
        let (client_1, server_1) = (
            cpu::process_seconds(),
            if is_redis {
                cpu::redis_seconds(&server).await
            } else {
                0.0
            },
        );
        let stats_mid = floor.script_stats().await;
        let lock_started = Instant::now();
        let lock_rate = concurrent_pairs(&connected.locks, window).await;
        let lock_window = lock_started.elapsed().as_secs_f64();
        let (client_2, server_2) = (
            cpu::process_seconds(),
            if is_redis {
                cpu::redis_seconds(&server).await
            } else {
                0.0
            },
        );
        let stats_end = floor.script_stats().await;
        let floor_pair_rate = floor_rate / f64::from(floor.ops_per_pair());
        let concurrent_ratio = lock_rate / floor_pair_rate;
        println!(
            "\n{CONCURRENT_TASKS} tasks, distinct keys        {lock_rate:>10.0} acquire+release/s"
        );
        println!("  floor: {:<26}{floor_pair_rate:>10.0} /s  ({floor_rate:.0} raw ops/s)  ratio {concurrent_ratio:.2}×",
            floor.rate_name());
        let mut cpu_split = json!(null);
        if is_redis {
            println!("{CONCURRENT_TASKS} tasks, distinct keys: {concurrent_ratio:.2}× half raw EVALSHA (goal ≥ 0.8)");
            // Where the time goes: CPU per acquire+release, this process's and the server's,
            // against the floor's per two raw calls (both share the machine's cores).
            let floor_pairs_done = floor_pair_rate * window.as_secs_f64();
            let lock_pairs_done = lock_rate * lock_window;
            let per = |seconds: f64, pairs: f64| seconds / pairs.max(1.0) * 1e6;
            let (client_floor, server_floor) = (
                per(client_1 - client_0, floor_pairs_done),
                per(server_1 - server_0, floor_pairs_done),
            );
            let (client_lock, server_lock) = (
                per(client_2 - client_1, lock_pairs_done),
                per(server_2 - server_1, lock_pairs_done),
            );
            println!("  CPU per acquire+release: client {client_lock:.1} µs, server {server_lock:.1} µs; per 2 raw EVALSHA: client {client_floor:.1} µs, server {server_floor:.1} µs");
            cpu_split = json!({ "client_us_per_pair": client_lock, "server_us_per_pair": server_lock,
                                "floor_client_us_per_pair": client_floor, "floor_server_us_per_pair": server_floor });
        }
        // Where the time goes: the server's own time per script call in each phase (network
        // and client excluded). When the server is the bottleneck, this multiple, not the
        // client, sets the ratio above.
        let mut server_time = json!(null);
        if let (Some(start), Some(mid), Some(end)) = (stats_start, stats_mid, stats_end) {
            let (floor_call, lock_call) = (mid.since(start), end.since(mid));
            let multiple = lock_call.usec_per_call() / floor_call.usec_per_call().max(1e-9);
            println!("  server time per script call (INFO commandstats): lock {:.2} µs, floor {:.2} µs  \
                      ({multiple:.1}× the floor's)",
                lock_call.usec_per_call(), floor_call.usec_per_call());
            server_time = json!({ "lock_usec_per_call": lock_call.usec_per_call(),
                                  "floor_usec_per_call": floor_call.usec_per_call(), "multiple": multiple });
        }

        // 3. Handoff under 16-way contention on one key, with round trips per acquisition.
        let floor_handoff = floor.handoff(iterations).await;
        let commands_before = connected
            .redis
            .as_ref()
            .map(lock_core::RedisBackend::commands_sent);
        let stats_before = floor.script_stats().await;
        let (mut handoffs, acquisitions) = handoff(&connected, iterations).await;
        let lock_handoff = Percentiles::of(&mut handoffs);
        let handoff_ratio = ratio(lock_handoff.p50, floor_handoff.p50);
        println!("\nhandoff, {HANDOFF_WAITERS} waiters on one key     p50 {:>10}  p99 {:>10}  ({acquisitions} acquisitions)",
            micros(lock_handoff.p50), micros(lock_handoff.p99));
        println!(
            "  floor: {:<26}p50 {:>10}  p99 {:>10}  ratio {handoff_ratio:.2}× (p50)",
            floor.handoff_name(),
            micros(floor_handoff.p50),
            micros(floor_handoff.p99)
        );
        let mut round_trips = json!(null);
        if let (Some(before), Some(redis)) = (commands_before, connected.redis.as_ref()) {
            let sent = redis.commands_sent() - before;
            let per_acquisition = sent as f64 / acquisitions as f64;
            let server = floor
                .script_stats()
                .await
                .zip(stats_before)
                .map(|(after, before)| after.since(before).calls);
            println!("  client round trips per acquisition (acquire attempts + release): {per_acquisition:.2}  \
                      [client counted {sent}; server INFO commandstats evalsha+eval: {}]",
                server.map_or("n/a".into(), |s| s.to_string()));
            round_trips = json!({ "per_acquisition": per_acquisition, "client_commands": sent, "server_script_calls": server });
        }

        // 4. What #[distributed_lock] costs over the same calls by hand (memory backend).
        let macro_ratio = macro_overhead(iterations).await;
        println!("\n#[distributed_lock] vs the same calls by hand (memory): ratio {macro_ratio:.3}× (median of 9 rounds)");

        // 5. etcd only: 8 clients contending for one key (`bench::etcd_contention`).
        if kind == BackendKind::Etcd {
            lock_harness::bench::etcd_contention::run().await;
        }

        let (cache, middleware, idempotency, fair) = match kind {
            BackendKind::Redis => (
                lock_harness::bench::cache::run(&url, iterations).await,
                lock_harness::bench::middleware::run(&url, iterations).await,
                lock_harness::bench::idempotency::run(&url, iterations).await,
                lock_harness::bench::fair::run(&url).await,
            ),
            _ => (json!(null), json!(null), json!(null), json!(null)),
        };

        let report = json!({
            "cache": cache,
            "response_cache_layer": middleware,
            "idempotency_layer": idempotency,
            "fair_lock": fair,
            "macro_overhead_ratio": macro_ratio,
            "backend": kind.name(),
            "loaded": loaded,
            "iterations": iterations,
            "raw_floor": { "op": floor.op_name(), "mean_us": us(floor_single.mean), "p50_us": us(floor_single.p50),
                           "p99_us": us(floor_single.p99), "ops_per_pair": floor.ops_per_pair(), "raw_ops_per_s": floor_rate },
            "uncontended": { "mean_us": us(mean_pair), "p50_us": us(lock_single.p50), "p99_us": us(lock_single.p99),
                             "floor_mean_us": us(floor_pair), "floor": floor.pair_name(), "ratio": uncontended_ratio,
                             "rslock": rslock, "raw_scripts": raw_scripts_floor },
            "concurrent": { "tasks": CONCURRENT_TASKS, "pairs_per_s": lock_rate, "floor_pairs_per_s": floor_pair_rate,
                            "floor_raw_ops_per_s": floor_rate, "floor": floor.rate_name(), "ratio": concurrent_ratio,
                            "server_time": server_time, "cpu": cpu_split },
            "handoff": { "waiters": HANDOFF_WAITERS, "p50_us": us(lock_handoff.p50), "p99_us": us(lock_handoff.p99),
                         "floor_p50_us": us(floor_handoff.p50), "floor_p99_us": us(floor_handoff.p99), "ratio_p50": handoff_ratio,
                         "floor": floor.handoff_name(), "round_trips": round_trips },
        });
        floor.clean_up().await;
        write_report(&report_name(kind.name(), loaded), &report);
    }
}

/// Rounds of the uncontended figure (floor, lock and rslock take turns).
const UNCONTENDED_ROUNDS: usize = 10;

/// `n` uncontended acquire+release cycles on one task, over 64 keys in turn.
async fn lock_cycles(locks: &LockClient, n: usize) -> Summary {
    let mut pairs = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("solo:{}", i % 64);
        let start = Instant::now();
        let guard = locks.lock(&key).await.expect("acquire");
        guard.release().await.expect("release");
        pairs.push(start.elapsed());
    }
    Summary::of(&mut pairs)
}

/// The medians of rounds' figures.
#[derive(Clone, Copy)]
struct RoundFigures {
    mean: Duration,
    p50: Duration,
    p99: Duration,
}

impl RoundFigures {
    fn of(rounds: &[Summary]) -> Self {
        let median = |pick: fn(&Summary) -> Duration| {
            let mut values: Vec<Duration> = rounds.iter().map(pick).collect();
            values.sort();
            values.get(values.len() / 2).copied().unwrap_or_default()
        };
        Self {
            mean: median(|s| s.mean),
            p50: median(|s| s.p50),
            p99: median(|s| s.p99),
        }
    }

    /// Each figure divided by `ops` (a pair's floor back to one operation).
    fn per_op(self, ops: u32) -> Self {
        Self {
            mean: self.mean / ops,
            p50: self.p50 / ops,
            p99: self.p99 / ops,
        }
    }
}

/// The median over rounds of `a`'s mean over `b`'s.
fn median_ratio(a: &[Summary], b: &[Summary]) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| ratio(a.mean, b.mean))
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The report's file name: `<name>`, or `<name>-loaded` for a run with `--load`.
fn report_name(name: &str, loaded: bool) -> String {
    if loaded {
        format!("{name}-loaded")
    } else {
        name.to_owned()
    }
}

/// The database of a SQL backend and its URL.
fn sql_name(kind: BackendKind) -> Option<(&'static str, String)> {
    match kind {
        BackendKind::Postgres => Some(("postgres", example_support::backend::postgres_url())),
        BackendKind::Mysql => Some(("mysql", example_support::backend::mysql_url())),
        _ => None,
    }
}

/// Writes `report` to `target/bench/<name>.json`.
fn write_report(name: &str, report: &serde_json::Value) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).ok();
    let path = dir.join(format!("{name}.json"));
    match std::fs::write(
        &path,
        serde_json::to_string_pretty(report).unwrap_or_default(),
    ) {
        Ok(()) => println!("\nwritten: {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

/// Median over alternating rounds of (macro time / hand-written time) on the memory backend.
async fn macro_overhead(iterations: usize) -> f64 {
    use lock_harness::bench::overhead::{annotated, by_hand};
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

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
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
