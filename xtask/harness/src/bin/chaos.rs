//! `cargo xtask chaos`: the fault catalogue (issue 15) against every backend. See `--help`.

use std::time::{Duration, Instant};

use example_support::backend::{postgres_url, redis_url, BackendKind};
use example_support::flags::{usage_error, Flags};
use lock_harness::chaos::report::{table, Outcome, Row};
use lock_harness::chaos::scenarios::{Chaos, Settings, CATALOGUE};
use lock_harness::chaos::target::Target;
use lock_harness::chaos::{cache_worker, starve, web, worker};
use lock_harness::{etcd_url, mysql_url, zookeeper_url};
use lock_testing::{free_port, unique, RedisServer};

/// RedLock's nodes in a chaos run: 3, so one node is a minority and two a majority.
const REDLOCK_NODES: usize = 3;

const FLAGS: &[&str] = &[
    "backend",
    "scenario",
    "short",
    "rounds",
    "ttl-ms",
    "redis-url",
    "unsafe-no-fence",
    "unsafe-ignore-lost",
    "unsafe-long-lease",
    "unsafe-poll",
    "unsafe-no-breaker",
    "help",
];

const HELP: &str = "\
chaos: the fault catalogue (issue 15) run against the lock backends. Each scenario starts
worker processes (this program, `chaos worker ...`) that lock through the backend and write
through a fenced resource (a RedisFencedStore value on the stack's Redis) with their guard's
fencing token. Faults: SIGSTOP/SIGCONT and SIGKILL of workers and of the lock server, a fault
proxy (delay, stall, blackhole, lost reply) between a worker and its server, an early expiry
from outside, a restart of the run's own Redis, a starved runtime with both cores busy, acquire
futures dropped at random points, a crowd of 1,000 waiters, cluster members killed, and, for
the response cache, a failing application and a killed instance (the cache's computations).
Verdicts come from the resource's counters, the workers' events and the servers' own counters,
never from the library's own view. Ends with one table; exits 1 on any violation.

Usage: chaos [--backend B|all] [--scenario N|all] [--short] [--rounds N] [--ttl-ms T]
             [--unsafe-no-fence] [--unsafe-ignore-lost] [--unsafe-long-lease] [--unsafe-poll]
             [--unsafe-no-breaker]

  --backend B           redis, zookeeper, etcd, postgres, mysql, redlock (3 nodes of the
                        run's own), redis-cluster, redis-sentinel (the stack's sets; not in
                        all), a comma list, or all (default)
  --scenario N          a catalogue number (1..=13, 15..=20), a comma list, or all (default)
  --short               1 round, smaller sizes (1,000 drops, 200 waiters), Redis, ZooKeeper and
                        RedLock only (unless --backend says otherwise): what `cargo xtask ci` runs
  --rounds N            rounds per scenario and backend (default 3)
  --ttl-ms T            the lease every holder takes (default 2000)
  --redis-url URL       the resource's Redis (default LOCK_TEST_REDIS_URL)
  --unsafe-no-fence     workers write without the fencing check (shows stale writes get in)
  --unsafe-ignore-lost  faulted holders keep writing for 3 x TTL after lost()
  --unsafe-long-lease   the killed holder (7) takes a 10x lease; grants are abandoned with a
                        10x lease (8, 9)
  --unsafe-poll         the crowd's waiters (10) poll instead of waiting for wake-ups
  --unsafe-no-breaker   the web service (17) runs with a breaker that does not fail fast, as
                        before it had one: every request waits for the connection's timeouts

Scenarios: 1 holder paused past its lease, 2 lock server paused past the lease, 3 acquire
reply delayed past the lease, 4 write delayed past the lease, 5 client-server partition
(blackhole/stall), 6 Redis killed and restarted without persistence, 7 client killed while
holding, 8 acquire futures dropped at random points, 9 acquire applied but its reply lost,
10 1,000 waiters on one key, 11 watchdog starved, 12 cluster member and leader killed
(ZooKeeper, etcd: clusters of the run's own), 13 key expired early on the server,
15 the response cache's application failing (503) or answering uncacheable responses, 200
cold requests over two instances, 16 the instance computing a cold response killed (two
processes); 15 and 16 run on the cache's stores, Redis and PostgreSQL; 17 Redis down for
30 s (6 s with --short) under a service with the response cache, idempotency and keyed-lock
layers (`chaos web`): latency per route against a route with no layer, WARN lines per minute,
time to store again once Redis is back; 18 (RedLock) a minority of nodes paused past the lease
while A holds, then a node A holds restarted empty; 19 (redis-cluster, redis-sentinel) the
primary of the contended keys killed after its replicas were stopped for 1 s (so the promoted
one lags), 8 clients on, fenced writes counted; 20 the same with replication acknowledged
(WAIT) before a grant counts.
The lock Redis is a redis-server of the run's own (needs redis-server on PATH); ZooKeeper,
etcd, PostgreSQL and MySQL are the stack's (LOCK_TEST_*_URL, as `cargo xtask stack up` sets).
";

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("worker") {
        args.next();
        let flags = Flags::parse(args, worker::FLAGS).unwrap_or_else(|e| usage_error(&e));
        std::process::exit(worker::run(&flags).await);
    }
    if args.peek().map(String::as_str) == Some("cache-worker") {
        args.next();
        let flags = Flags::parse(args, cache_worker::FLAGS).unwrap_or_else(|e| usage_error(&e));
        std::process::exit(cache_worker::run(&flags).await);
    }
    if args.peek().map(String::as_str) == Some("web") {
        args.next();
        let flags = Flags::parse(args, web::FLAGS).unwrap_or_else(|e| usage_error(&e));
        std::process::exit(web::run(&flags).await);
    }
    if args.peek().map(String::as_str) == Some("hog") {
        args.next();
        let ms = args.next().and_then(|ms| ms.parse().ok()).unwrap_or(1000);
        tokio::task::spawn_blocking(move || starve::hog(ms))
            .await
            .ok();
        return;
    }
    let flags = Flags::parse(args, FLAGS).unwrap_or_else(|e| usage_error(&e));
    if flags.get("help").is_some() {
        print!("{HELP}");
        return;
    }
    let short = flags.get("short").is_some();
    let backends = backends(flags.get("backend"), short);
    let scenarios = scenarios(flags.get("scenario"));
    let settings = Settings {
        ttl: Duration::from_millis(flags.number_or_exit("ttl-ms", 2000)),
        rounds: u32::try_from(flags.number_or_exit("rounds", if short { 1 } else { 3 }))
            .unwrap_or(1)
            .max(1),
        unsafe_no_fence: flags.get("unsafe-no-fence").is_some(),
        unsafe_ignore_lost: flags.get("unsafe-ignore-lost").is_some(),
        unsafe_long_lease: flags.get("unsafe-long-lease").is_some(),
        unsafe_poll: flags.get("unsafe-poll").is_some(),
        unsafe_no_breaker: flags.get("unsafe-no-breaker").is_some(),
        short,
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/chaos")
        .join(format!("redis-{}", std::process::id()));
    let redis = RedisServer::start(free_port(), dir.clone());
    let lock_redis = redis.url();
    // RedLock's nodes: servers of the run's own too (paused, killed and restarted empty).
    let redlock: Vec<RedisServer> = if backends.contains(&BackendKind::Redlock) {
        (0..REDLOCK_NODES)
            .map(|i| RedisServer::start(free_port(), dir.join(format!("redlock-{i}"))))
            .collect()
    } else {
        Vec::new()
    };
    let redlock_urls = redlock
        .iter()
        .map(RedisServer::url)
        .collect::<Vec<_>>()
        .join(",");
    let cx = Chaos {
        settings,
        exe: std::env::current_exe().unwrap_or_else(|e| usage_error(&format!("own path: {e}"))),
        resource_url: redis_url(&flags),
        redis: std::sync::Mutex::new(redis),
        redlock: std::sync::Mutex::new(redlock),
        run: unique("run").replace('-', ""),
    };
    let unsafe_switches: Vec<&str> = [
        (settings.unsafe_no_fence, "no fence"),
        (settings.unsafe_ignore_lost, "lost() ignored"),
        (settings.unsafe_long_lease, "long lease"),
        (settings.unsafe_poll, "polling waiters"),
        (settings.unsafe_no_breaker, "breaker does not fail fast"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    println!(
        "chaos: scenarios {scenarios:?} on {} ({} round(s), lease {:?}{})",
        backends
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", "),
        settings.rounds,
        settings.ttl,
        if unsafe_switches.is_empty() {
            String::new()
        } else {
            format!(", UNSAFE: {}", unsafe_switches.join(", "))
        }
    );
    let started = Instant::now();
    let mut rows = Vec::new();
    for &scenario in &scenarios {
        let name = CATALOGUE
            .iter()
            .find(|(n, ..)| *n == scenario)
            .map_or("?", |(_, name, _)| name);
        for &kind in &backends {
            let target = Target::new(kind, &url_of(kind, &lock_redis, &redlock_urls));
            eprintln!("scenario {scenario} ({name}) on {}", kind.name());
            let outcome = cx.run(scenario, &target).await;
            rows.push(Row {
                scenario,
                name,
                backend: kind.name(),
                outcome,
            });
        }
    }
    drop(cx);
    std::fs::remove_dir_all(&dir).ok();
    println!("\n{}", table(&rows));
    let failed = rows.iter().filter(|r| r.failed()).count();
    let ran = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ran(_)))
        .count();
    println!(
        "{ran} scenario runs, {failed} with violations, in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
}

/// The lock server's URL for `kind`: the run's own Redis (or RedLock nodes, comma-separated),
/// else the stack's server.
fn url_of(kind: BackendKind, lock_redis: &str, redlock: &str) -> String {
    match kind {
        BackendKind::Redis => lock_redis.to_owned(),
        BackendKind::Zookeeper => zookeeper_url(),
        BackendKind::Etcd => etcd_url(),
        BackendKind::Postgres => postgres_url(),
        BackendKind::Mysql => mysql_url(),
        BackendKind::Memory => String::new(),
        BackendKind::Redlock => redlock.to_owned(),
        BackendKind::RedisCluster => example_support::backend::redis_cluster_urls().join(","),
        BackendKind::RedisSentinel => example_support::backend::redis_sentinel_urls().join(","),
    }
}

fn backends(raw: Option<&str>, short: bool) -> Vec<BackendKind> {
    let all = [
        BackendKind::Redis,
        BackendKind::Zookeeper,
        BackendKind::Etcd,
        BackendKind::Postgres,
        BackendKind::Mysql,
        BackendKind::Redlock,
    ];
    match raw {
        None | Some("all") if short => vec![
            BackendKind::Redis,
            BackendKind::Zookeeper,
            BackendKind::Redlock,
        ],
        None | Some("all") => all.to_vec(),
        Some(list) => list
            .split(',')
            .map(|name| BackendKind::parse(name.trim()).unwrap_or_else(|e| usage_error(&e)))
            .collect(),
    }
}

fn scenarios(raw: Option<&str>) -> Vec<u32> {
    match raw {
        None | Some("all") => CATALOGUE.iter().map(|(n, ..)| *n).collect(),
        Some(list) => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .ok()
                    .filter(|n| CATALOGUE.iter().any(|(c, ..)| c == n))
                    .unwrap_or_else(|| {
                        usage_error(&format!("unknown scenario {n:?} (1..=13, 15..=20 or all)"))
                    })
            })
            .collect(),
    }
}
