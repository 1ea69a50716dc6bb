//! `chaos worker ...`: one lock client in a process of its own, so the coordinator can pause
//! it (SIGSTOP/SIGCONT) and kill it (SIGKILL). It takes the round's lock, runs critical
//! sections through the fenced [`Resource`] with its guard's fencing token, and prints one
//! line per event on stdout: `EV <name> <wall-clock µs> [fields...]` (`ready`, `acquired
//! <fence>`, `lost <reason>`, `late-write <accepted|refused|stale>`, `acquire-result ...`,
//! `starve-start`, `starve-end`, `last-write <µs>`, `released <true|false|error>`, `done`,
//! `error <message>`).
//!
//! Scenarios 8 and 10 run a workload of their own instead (`--drop-acquires`, `--waiters`: see
//! [`drops`](super::drops) and [`crowd`](super::crowd)).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use example_support::backend::BackendKind;
use example_support::flags::Flags;
use lock_core::{LeaseMode, LockClient, LockError, LockGuard};
use tokio::time::{sleep, Instant};

use super::resource::{Resource, Written};

/// The flags `chaos worker` takes.
pub const FLAGS: &[&str] = &[
    "backend",
    "url",
    "resource-url",
    "round",
    "ttl-ms",
    "poll-ms",
    "period-ms",
    "hold-ms",
    "write-delay-ms",
    "linger-ms",
    "give-up-ms",
    "fixed",
    "no-fence",
    "acquire-only",
    "start-delay-ms",
    "response-timeout-ms",
    "stay-ms",
    "abandon",
    "starve-after-ms",
    "starve-ms",
    "drop-acquires",
    "waiters",
    "clients",
    "hold-us",
    "unsafe-poll",
];

/// Wall-clock µs since the epoch: the one clock the coordinator and every worker share (one
/// host).
#[must_use]
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Prints one event line.
pub(super) fn event(name: &str, fields: &str) {
    // Rust's stdout is line-buffered: each event leaves at once, even into a pipe.
    println!("EV {name} {} {fields}", wall_us());
}

/// The lock client of `kind` on `url`, under the namespace `chaos`. ZooKeeper's session
/// timeout and etcd's session TTL (what keeps waiting entries) are set to `ttl`, so that a
/// client that stops answering leaves the queue after about one lease there as on the
/// lease-based backends. `response` is how long one command may
/// take (the backends' default, 2 s, when `None`).
pub async fn connect(
    kind: BackendKind,
    url: &str,
    ttl: Duration,
    response: Option<Duration>,
) -> Result<LockClient, LockError> {
    let response = response.unwrap_or(Duration::from_secs(2));
    let client = match kind {
        BackendKind::Memory => LockClient::builder(lock_core::MemoryBackend::new()),
        BackendKind::Redis => LockClient::builder(
            lock_core::RedisBackend::builder(url)
                .response_timeout(response)
                .connect()
                .await?,
        ),
        BackendKind::Zookeeper => LockClient::builder(
            lock_core::ZooKeeperBackend::builder(url)
                .session_timeout(ttl)
                .connect()
                .await?,
        ),
        BackendKind::Etcd => LockClient::builder(
            lock_core::EtcdBackend::builder(url)
                .response_timeout(response)
                .session_ttl(ttl)
                .connect()
                .await?,
        ),
        BackendKind::Postgres => LockClient::builder(
            lock_core::PostgresBackend::builder(url)
                .response_timeout(response)
                .connect()
                .await?,
        ),
        BackendKind::Mysql => LockClient::builder(
            lock_core::MySqlBackend::builder(url)
                .response_timeout(response)
                .connect()
                .await?,
        ),
        // `url`: the nodes' URLs, comma-separated.
        BackendKind::Redlock => {
            let mut nodes = Vec::new();
            for node in url.split(',') {
                nodes.push(
                    lock_core::RedisBackend::builder(node)
                        .response_timeout(response)
                        .connect()
                        .await?,
                );
            }
            LockClient::builder(lock_core::RedLock::new(nodes)?)
        }
        // `url`: some of the cluster's nodes, comma-separated.
        BackendKind::RedisCluster => LockClient::builder(
            lock_core::RedisBackend::builder_cluster(url.split(','))
                .response_timeout(response)
                .connect()
                .await?,
        ),
        // `url`: the sentinels, comma-separated; the service is the stack's.
        BackendKind::RedisSentinel => LockClient::builder(
            lock_core::RedisBackend::builder_sentinel(
                url.split(','),
                example_support::backend::redis_sentinel_service(),
            )
            .response_timeout(response)
            .connect()
            .await?,
        ),
    };
    client.namespace("chaos").build()
}

struct Plan {
    ttl: Duration,
    poll: Duration,
    period: Duration,
    hold: Option<Duration>,
    write_delay: Option<Duration>,
    linger: Option<Duration>,
    give_up: Duration,
    fixed: bool,
    fenced: bool,
    /// `--starve-after-ms` and `--starve-ms`: when, into the hold, the runtime is blocked, and
    /// for how long (scenario 11).
    starve: Option<(Duration, Duration)>,
}

/// Runs the worker with the flags after `worker`; returns the exit code.
pub async fn run(flags: &Flags) -> i32 {
    let ms = |name, default| Duration::from_millis(flags.number_or_exit(name, default));
    let optional_ms = |name| flags.get(name).map(|_| ms(name, 0));
    let plan = Plan {
        ttl: ms("ttl-ms", 2000),
        poll: ms("poll-ms", 10),
        period: ms("period-ms", 20),
        hold: optional_ms("hold-ms"),
        write_delay: optional_ms("write-delay-ms"),
        linger: optional_ms("linger-ms"),
        give_up: ms("give-up-ms", 30_000),
        fixed: flags.get("fixed").is_some(),
        fenced: flags.get("no-fence").is_none(),
        starve: optional_ms("starve-ms").map(|d| (ms("starve-after-ms", 0), d)),
    };
    let kind = flags.backend_or_exit();
    let required = |name: &str| {
        flags
            .get(name)
            .unwrap_or_else(|| {
                example_support::flags::usage_error(&format!("chaos worker needs --{name}"))
            })
            .to_owned()
    };
    let (url, round) = (required("url"), required("round"));
    let response = flags
        .get("response-timeout-ms")
        .map(|_| ms("response-timeout-ms", 0));
    if let Some(count) = flags
        .get("drop-acquires")
        .map(|_| flags.number_or_exit("drop-acquires", 0))
    {
        return super::drops::run(
            kind,
            &url,
            &round,
            plan.ttl,
            count,
            flags.get("abandon").is_some(),
        )
        .await;
    }
    if let Some(waiters) = flags
        .get("waiters")
        .map(|_| flags.number_or_exit("waiters", 0))
    {
        let crowd = super::crowd::Crowd {
            waiters: waiters as usize,
            clients: flags.number_or_exit("clients", 10).max(1) as usize,
            hold: Duration::from_micros(flags.number_or_exit("hold-us", 500)),
            ttl: plan.ttl,
            poll: flags.get("unsafe-poll").is_some(),
        };
        return super::crowd::run(kind, &url, &round, &crowd, ms("start-delay-ms", 0)).await;
    }
    let locks = match connect(kind, &url, plan.ttl, response).await {
        Ok(locks) => locks,
        Err(e) => {
            event("error", &format!("connect: {}", e.with_causes()));
            return 3;
        }
    };
    let resource = match Resource::connect(&required("resource-url"), &round).await {
        Ok(resource) => resource,
        Err(e) => {
            event("error", &format!("resource: {e}"));
            return 3;
        }
    };
    event("ready", "");
    let mode = if plan.fixed {
        LeaseMode::fixed(plan.ttl)
    } else {
        LeaseMode::watchdog(plan.ttl)
    };
    if flags.get("acquire-only").is_some() {
        sleep(ms("start-delay-ms", 0)).await;
        let abandon = flags.get("abandon").is_some();
        let code = acquire_once(&locks, &round, mode, abandon).await;
        // Stay connected (a session-bound backend keeps what this process left behind).
        sleep(ms("stay-ms", 0)).await;
        event("exit", "");
        return code;
    }
    let Some(guard) = acquire(&locks, &round, mode, &plan).await else {
        event("gave-up", "");
        return 4;
    };
    event("acquired", &guard.fencing_token().get().to_string());
    let lost = guard.lost();
    let reporting_lost = tokio::spawn(async move {
        let reason = lost.await;
        event("lost", &reason.to_string());
    });
    let value = format!("{}", std::process::id());
    if let Some(delay) = plan.write_delay {
        critical_section(&resource, &guard, &plan, &value).await;
        // The write was already on its way: no look at the lease before it lands.
        sleep(delay).await;
        let written = critical_section(&resource, &guard, &plan, &value).await;
        event("late-write", written.map_or("error", name_of));
    } else {
        hold(&resource, &guard, &plan, &value).await;
    }
    let was_lost = guard.is_lost();
    let released = match guard.release().await {
        Ok(held) => held.to_string(),
        Err(e) => format!("error {}", e.with_causes()),
    };
    event("released", &released);
    // A hold that ended on the loss waits for its report before the process exits, which
    // would otherwise drop the reporting task should it not have run yet (a runtime just
    // back from starvation has a queue to work through).
    if was_lost {
        tokio::time::timeout(Duration::from_secs(5), reporting_lost)
            .await
            .ok();
    }
    event("done", "");
    0
}

/// Critical sections every `period` until the lease is lost (plus `linger` with
/// `--linger-ms`: the `--unsafe-ignore-lost` holder) or `hold` has passed.
async fn hold(resource: &Resource, guard: &LockGuard, plan: &Plan, value: &str) {
    let started = Instant::now();
    let mut lost_at: Option<Instant> = None;
    let mut last_write = None;
    let mut starve = plan.starve;
    loop {
        if let Some((after, length)) = starve {
            if started.elapsed() >= after {
                starve = None;
                event("starve-start", "");
                super::starve::block_runtime(length).await;
                event("starve-end", "");
            }
        }
        if guard.is_lost() {
            let Some(linger) = plan.linger else { break };
            if lost_at.get_or_insert_with(Instant::now).elapsed() >= linger {
                break;
            }
        }
        if plan.hold.is_some_and(|hold| started.elapsed() >= hold) {
            break;
        }
        last_write = Some(wall_us());
        critical_section(resource, guard, plan, value).await;
        sleep(plan.period).await;
    }
    if let Some(at) = last_write {
        event("last-write", &at.to_string());
    }
}

async fn critical_section(
    resource: &Resource,
    guard: &LockGuard,
    plan: &Plan,
    value: &str,
) -> Option<Written> {
    match resource
        .section(guard.fencing_token(), plan.fenced, value)
        .await
    {
        Ok(written) => Some(written),
        Err(e) => {
            event("error", &format!("section: {e}"));
            None
        }
    }
}

fn name_of(written: Written) -> &'static str {
    match written {
        Written::Accepted => "accepted",
        Written::Refused => "refused",
        Written::StaleAccepted => "stale",
    }
}

/// Polls `try_acquire` every `poll` (so the moment the key frees is seen within `poll`).
async fn acquire(locks: &LockClient, key: &str, mode: LeaseMode, plan: &Plan) -> Option<LockGuard> {
    let started = Instant::now();
    let mut last_error = String::new();
    while started.elapsed() < plan.give_up {
        match locks.lock(key).lease(mode).try_acquire().await {
            Ok(Some(guard)) => return Some(guard),
            Ok(None) => {}
            Err(e) => {
                let text = e.with_causes();
                if text != last_error {
                    event("error", &format!("acquire: {text}"));
                    last_error = text;
                }
            }
        }
        sleep(plan.poll).await;
    }
    None
}

/// One `try_acquire`: `acquire-result none`, `acquire-result error <e>`, or
/// `acquire-result granted <remaining ms> <lost> <fence>`; a grant is then released, or, with
/// `abandon` (`--unsafe-long-lease` in scenario 9), forgotten as a client that lost track of
/// it would.
async fn acquire_once(locks: &LockClient, key: &str, mode: LeaseMode, abandon: bool) -> i32 {
    event("acquiring", "");
    match locks.lock(key).lease(mode).try_acquire().await {
        Ok(None) => event("acquire-result", "none"),
        Err(e) => event("acquire-result", &format!("error {}", e.with_causes())),
        Ok(Some(guard)) => {
            event(
                "acquire-result",
                &format!(
                    "granted {} {} {}",
                    guard.remaining().as_millis(),
                    guard.is_lost(),
                    guard.fencing_token().get()
                ),
            );
            if abandon {
                guard.abandon();
                event("released", "abandoned");
            } else {
                let released = guard
                    .release()
                    .await
                    .map_or_else(|_| "error".to_owned(), |b| b.to_string());
                event("released", &released);
            }
        }
    }
    event("done", "");
    0
}
