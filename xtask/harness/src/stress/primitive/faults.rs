//! `--faults` (semaphore only): holders are paused (SIGSTOP past their lease, then SIGCONT)
//! and killed (SIGKILL, then a replacement takes over the rest of their share) while the run
//! goes on, and the permits in use are counted by the resource, not by the library.
//!
//! The resource is a Redis sorted set of the permits in use, each with the end of its holder's
//! trusted lease (the holder's clock: now + `remaining()`, checked with `ensure_held()` just
//! before). One script prunes what has ended (Redis's `TIME`), refuses a use whose lease has
//! already ended (a holder that was paused between its check and its use: the resource's
//! fence, counted as `refused_stale`, not a violation), adds the use and sums the permits in
//! use: above the size is a violation. A killed holder's use ends with its lease, as its
//! permits do in the store. Operations and violations are counted in Redis too, so a killed
//! worker's count survives it.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::Duration;

use example_support::backend::BackendKind;
use example_support::flags::usage_error;
use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, Script};
use tokio::process::Child;
use tokio::time::Instant;

use super::{data, share, Plan, Tally};

/// The permits' lease in a fault run: short, so a pause of [`PAUSE`] outlives it.
pub(crate) const FAULT_LEASE: Duration = Duration::from_millis(1000);
/// How long a paused worker stays stopped.
const PAUSE: Duration = Duration::from_millis(2500);
/// How often a fault is injected.
const FAULT_EVERY: Duration = Duration::from_millis(700);
/// Kills in one run (each worker is replaced); the rest of the faults are pauses.
const MAX_KILLS: u32 = 3;

/// Registers a use of `count` permits until `valid_until` (ms since the epoch) and returns
/// `{1, permits in use}`, or `{0, 0}` when that lease has already ended.
static USE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"-- KEYS[1] zset of uses (member '<id>:<count>', score = end of lease, ms)
-- ARGV[1] member   ARGV[2] end of the holder's trusted lease (ms since the epoch)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if tonumber(ARGV[2]) <= now then
  return {0, 0}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local sum = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  sum = sum + tonumber(string.match(member, ':(%d+)$'))
end
return {1, sum}",
    )
});

/// What the resource said of a use.
pub(super) enum Use {
    /// In use; the permits in use with it.
    InUse(u64),
    /// The holder's lease had ended before the use reached the resource.
    Stale,
}

/// Registers a use of `count` permits by `id` until `valid_until_ms`.
pub(super) async fn begin_use(
    data: &mut MultiplexedConnection,
    plan: &Plan,
    id: &str,
    count: u32,
    valid_until_ms: u64,
) -> Use {
    let (registered, sum): (i64, u64) = USE
        .key(plan.key("uses"))
        .arg(format!("{id}:{count}"))
        .arg(valid_until_ms)
        .invoke_async(data)
        .await
        .expect("USE script");
    if registered == 1 {
        Use::InUse(sum)
    } else {
        Use::Stale
    }
}

/// Ends a use.
pub(super) async fn end_use(data: &mut MultiplexedConnection, plan: &Plan, id: &str, count: u32) {
    let _: i64 = data
        .zrem(plan.key("uses"), format!("{id}:{count}"))
        .await
        .expect("ZREM");
}

/// Adds one operation of worker `index` and what it found to the run's counters in Redis.
pub(super) async fn record(
    data: &mut MultiplexedConnection,
    plan: &Plan,
    index: u64,
    found: &BTreeMap<&'static str, u64>,
) {
    let stats = plan.key("stats");
    let mut pipe = redis::pipe();
    pipe.hincr(&stats, format!("ops:{index}"), 1).ignore();
    for (kind, n) in found {
        let field = match kind.strip_prefix("expected:") {
            Some(event) => format!("n:{event}"),
            None => format!("v:{kind}"),
        };
        pipe.hincr(&stats, field, *n).ignore();
    }
    let _: () = pipe.query_async(data).await.expect("HINCRBY");
}

/// Runs the workers with faults injected and returns what the counters in Redis say.
pub(super) async fn run(kind: BackendKind, url: &str, plan: &Plan) -> Tally {
    if plan.primitive != super::Primitive::Semaphore {
        usage_error("--faults runs with --primitive semaphore (the others' counters need fencing)");
    }
    let mut redis = data(url).await;
    let shares: Vec<u64> = (0..plan.processes)
        .map(|p| share(plan.operations, plan.processes, p))
        .collect();
    let mut workers: Vec<Child> = (0..plan.processes)
        .map(|p| spawn(kind, url, plan, p, shares[p as usize]))
        .collect();
    let (mut kills, mut pauses, mut next) = (0u32, 0u32, 0usize);
    let started = Instant::now();
    loop {
        let mut running = Vec::new();
        for (index, worker) in workers.iter_mut().enumerate() {
            if worker.try_wait().expect("worker status").is_none() {
                running.push(index);
            }
        }
        if running.is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "fault run stalled"
        );
        tokio::time::sleep(FAULT_EVERY).await;
        // Prefer a worker that holds permits right now: pausing it is the case that matters.
        let holding = holders(&mut redis, plan).await;
        let index = running
            .iter()
            .copied()
            .find(|i| holding.contains(&(*i as u64)))
            .unwrap_or(running[next % running.len()]);
        next += 1;
        let Some(pid) = workers[index].id() else {
            continue;
        };
        if kills < MAX_KILLS && next % 3 == 0 {
            signal("KILL", pid);
            workers[index].wait().await.ok();
            kills += 1;
            let done = ops_of(&mut redis, plan, index as u64).await;
            let rest = shares[index].saturating_sub(done);
            println!("fault: killed worker {index} (pid {pid}); a replacement does its last {rest} operations");
            workers[index] = spawn(kind, url, plan, index as u64, rest);
        } else {
            signal("STOP", pid);
            tokio::time::sleep(PAUSE).await;
            signal("CONT", pid);
            pauses += 1;
            println!("fault: paused worker {index} (pid {pid}) for {PAUSE:?}, past its {FAULT_LEASE:?} lease");
        }
    }
    for worker in &mut workers {
        let status = worker.wait().await.expect("worker status");
        if !status.success() {
            usage_error(&format!("a worker failed: {status}"));
        }
    }
    let stats: BTreeMap<String, u64> = redis.hgetall(plan.key("stats")).await.expect("HGETALL");
    let mut tally = Tally::default();
    let mut expected = BTreeMap::new();
    for (field, n) in stats {
        if field.starts_with("ops:") {
            tally.operations += n;
        } else if let Some(kind) = field.strip_prefix("v:") {
            tally.violations.insert(kind.to_owned(), n);
        } else if let Some(event) = field.strip_prefix("n:") {
            expected.insert(event.to_owned(), n);
        }
    }
    println!("faults: {kills} kill(s), {pauses} pause(s); expected under faults (not violations): {expected:?}");
    tally
}

/// The workers with a use registered at the resource now.
async fn holders(redis: &mut MultiplexedConnection, plan: &Plan) -> Vec<u64> {
    let uses: Vec<String> = redis.zrange(plan.key("uses"), 0, -1).await.expect("ZRANGE");
    uses.iter()
        .filter_map(|member| member.split(':').next()?.parse().ok())
        .collect()
}

async fn ops_of(redis: &mut MultiplexedConnection, plan: &Plan, index: u64) -> u64 {
    let done: Option<u64> = redis
        .hget(plan.key("stats"), format!("ops:{index}"))
        .await
        .expect("HGET");
    done.unwrap_or(0)
}

fn spawn(kind: BackendKind, url: &str, plan: &Plan, index: u64, operations: u64) -> Child {
    let exe = std::env::current_exe().expect("own path");
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["--worker", "--backend", kind.name(), "--redis-url", url])
        .args(["--primitive", "semaphore", "--run-id", &plan.run_id])
        .args(["--processes", &plan.processes.to_string()])
        .args(["--tasks", &plan.tasks.to_string()])
        .args(["--permits", &plan.permits.to_string()])
        .args(["--share", &operations.to_string()])
        .args(["--faults", "--worker-index", &index.to_string()])
        .stdout(Stdio::null())
        .kill_on_drop(true);
    if plan.broken {
        command.arg("--break-check");
    }
    command
        .spawn()
        .unwrap_or_else(|e| usage_error(&format!("cannot start worker: {e}")))
}

/// Sends `SIG<name>` to `pid` with `kill(1)` (no libc binding needed).
fn signal(name: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill -{name} {pid} failed");
}
