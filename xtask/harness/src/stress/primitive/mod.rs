//! `cargo xtask stress --primitive fair|rw|semaphore|latch --backend redis`: P processes × T
//! tasks hammer one primitive, and counters kept in Redis (the "resource", shared by every
//! process) count what would be a violation. Prints `operations: N  violations: V` with the
//! violations by kind, and exits non-zero when V > 0.
//!
//! | primitive | each operation | violations counted |
//! |---|---|---|
//! | `fair` | a critical section under the fair lock (`INCR`/`DECR` "inside"; fence check) | two inside at once; a fence not above the last; a grant while a task that started waiting 100 ms earlier still waits (out of order) |
//! | `rw` | a read (3 of 4) or write section | a writer beside a reader or another writer |
//! | `semaphore` | 1 or 2 permits of a semaphore of `--permits` (3) | permits in use above the size, counted by `INCRBY` |
//! | `latch` | a count-down, then a wait, per round (a latch per round of all P × T tasks) | a wait that returned before every task of its round had arrived |
//!
//! `--faults` (semaphore) pauses holders past their lease and kills them while the run goes
//! on, counting the permits in use at the resource (see [`faults`]).
//!
//! `--break-check` takes away what the primitive guarantees, to show once that the counters
//! do catch violations: the fair lock becomes the barging lock, writers take read locks, the
//! semaphore gets three times the permits the checker allows, and each latch starts at half
//! the tasks of its round.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use example_support::backend::BackendKind;
use example_support::flags::{usage_error, Flags};

use crate::stress::worker_reports::worker_reports;
use lock_core::{LockClient, MemoryBackend};
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use tokio::time::Instant;

use self::operations::Task;
use crate::connect;

mod faults;
mod operations;

/// Which primitive a run hammers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// The fair lock.
    Fair,
    /// The read-write lock.
    ReadWrite,
    /// The semaphore.
    Semaphore,
    /// The count-down latch.
    Latch,
}

impl Primitive {
    /// Parses `fair`, `rw`, `semaphore` or `latch`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "fair" => Ok(Self::Fair),
            "rw" | "read-write" => Ok(Self::ReadWrite),
            "semaphore" => Ok(Self::Semaphore),
            "latch" => Ok(Self::Latch),
            other => Err(format!(
                "unknown primitive {other:?}; expected fair, rw, semaphore or latch"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Fair => "fair",
            Self::ReadWrite => "rw",
            Self::Semaphore => "semaphore",
            Self::Latch => "latch",
        }
    }
}

/// One run's settings, as every process sees them.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) primitive: Primitive,
    pub(crate) processes: u64,
    pub(crate) tasks: u64,
    /// Operations in all (latch: count-downs; each is followed by a wait).
    pub(crate) operations: u64,
    pub(crate) broken: bool,
    /// Holders are paused and killed during the run (`--faults`, see [`faults`]).
    pub(crate) faults: bool,
    /// This worker's number in a fault run (its counters in Redis carry it).
    pub(crate) worker_index: u64,
    pub(crate) permits: u32,
    pub(crate) run_id: String,
}

impl Plan {
    pub(crate) fn key(&self, name: &str) -> String {
        format!("stress-prim:{}:{name}", self.run_id)
    }

    /// Latch rounds: each takes one count-down of every task.
    pub(crate) fn rounds(&self) -> u64 {
        (self.operations / (self.processes * self.tasks)).max(1)
    }
}

/// What a process (or the run) counted.
#[derive(Debug, Default)]
struct Tally {
    operations: u64,
    violations: BTreeMap<String, u64>,
}

impl Tally {
    fn total(&self) -> u64 {
        self.violations.values().sum()
    }

    fn add(&mut self, other: Tally) {
        self.operations += other.operations;
        for (kind, n) in other.violations {
            *self.violations.entry(kind).or_default() += n;
        }
    }
}

/// Runs the primitive stress named by `--primitive` (from `stress`'s `main`).
pub async fn run(flags: &Flags, url: &str) {
    let primitive =
        Primitive::parse(flags.get("primitive").unwrap_or("")).unwrap_or_else(|e| usage_error(&e));
    let kind = flags.backend_or_exit();
    let processes = match kind {
        BackendKind::Memory => 1,
        _ => flags.number_or_exit("processes", 4).max(1),
    };
    let worker = flags.get("worker").is_some();
    let plan = Plan {
        primitive,
        processes,
        tasks: flags.number_or_exit("tasks", 8).max(1),
        operations: flags.number_or_exit("sections", 20_000).max(1),
        broken: flags.get("break-check").is_some(),
        faults: flags.get("faults").is_some(),
        worker_index: flags.number_or_exit("worker-index", 0),
        permits: u32::try_from(flags.number_or_exit("permits", 3).clamp(1, 1000)).unwrap_or(3),
        run_id: flags.get("run-id").map_or_else(new_run_id, str::to_owned),
    };
    if worker {
        let share = flags.number_or_exit("share", 0);
        let locks = client(kind, url, &plan).await;
        let tally = work(&locks, url, &plan, share).await;
        println!(
            "{}",
            serde_json::json!({ "operations": tally.operations, "violations": tally.violations })
        );
        return;
    }
    println!(
        "stress: {} backend, {} on one key, {processes} process(es) × {} tasks, {} operations{}",
        kind.name(),
        primitive.name(),
        plan.tasks,
        plan.operations,
        if plan.broken {
            ", WITH THE CHECK BROKEN (violations expected)"
        } else {
            ""
        }
    );
    let started = Instant::now();
    let setup = client(kind, url, &plan).await;
    prepare(&setup, &plan).await;
    let mut tally = Tally::default();
    if plan.faults {
        if kind == BackendKind::Memory {
            usage_error("--faults needs a server backend: its workers are processes");
        }
        tally.add(faults::run(kind, url, &plan).await);
    } else if kind == BackendKind::Memory {
        tally.add(work(&setup, url, &plan, share(plan.operations, 1, 0)).await);
    } else {
        tally.add(spawn_workers(kind, url, &plan).await);
    }
    clean_up(url, &plan).await;
    let elapsed = started.elapsed();
    println!(
        "operations: {}  violations: {}  {:?}  ({:.0} operations/s over {elapsed:.2?})",
        tally.operations,
        tally.total(),
        tally.violations,
        tally.operations as f64 / elapsed.as_secs_f64()
    );
    if tally.total() > 0 || tally.operations < plan.operations {
        std::process::exit(1);
    }
}

fn new_run_id() -> String {
    format!("{}-{}", std::process::id(), now_ms())
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Splits `total` over `parts` as evenly as possible.
fn share(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

async fn client(kind: BackendKind, url: &str, plan: &Plan) -> LockClient {
    // The memory backend is one process: the coordinator's client is the workers' too.
    connect(
        kind,
        url,
        &format!("stress-{}", plan.run_id),
        &MemoryBackend::new(),
    )
    .await
    .unwrap_or_else(|e| usage_error(&format!("cannot reach the {} backend: {e}", kind.name())))
    .locks
}

async fn data(url: &str) -> MultiplexedConnection {
    // A worker may be paused (`--faults`) with commands in flight: no response timeout of the
    // client's own may fire for them when it runs again.
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(60)));
    redis::Client::open(url)
        .unwrap_or_else(|e| usage_error(&format!("bad Redis URL: {e}")))
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot reach Redis at {url}: {e}")))
}

/// What the run needs before the workers start: the semaphore's size, the latches.
async fn prepare(locks: &LockClient, plan: &Plan) {
    match plan.primitive {
        Primitive::Semaphore => {
            let size = if plan.broken {
                plan.permits * 3
            } else {
                plan.permits
            };
            locks
                .semaphore("resource", plan.permits)
                .set_permits(size)
                .await
                .expect("set permits");
        }
        Primitive::Latch => {
            let everyone = plan.processes * plan.tasks;
            let count = if plan.broken {
                (everyone / 2).max(1)
            } else {
                everyone
            };
            for round in 0..plan.rounds() {
                let latch = locks
                    .latch(format!("round:{round}"))
                    .expire_after(Duration::from_secs(600));
                assert!(latch.try_set_count(count).await.expect("set latch"));
            }
        }
        Primitive::Fair | Primitive::ReadWrite => {}
    }
}

async fn spawn_workers(kind: BackendKind, url: &str, plan: &Plan) -> Tally {
    let exe = std::env::current_exe().expect("own path");
    let mut commands = Vec::new();
    for p in 0..plan.processes {
        let mut command = tokio::process::Command::new(&exe);
        command
            .args(["--worker", "--backend", kind.name(), "--redis-url", url])
            .args([
                "--primitive",
                plan.primitive.name(),
                "--run-id",
                &plan.run_id,
            ])
            .args(["--processes", &plan.processes.to_string()])
            .args(["--tasks", &plan.tasks.to_string()])
            .args(["--sections", &plan.operations.to_string()])
            .args(["--permits", &plan.permits.to_string()])
            .args([
                "--share",
                &share(plan.operations, plan.processes, p).to_string(),
            ]);
        if plan.broken {
            command.arg("--break-check");
        }
        commands.push(command);
    }
    let mut tally = Tally::default();
    for parsed in worker_reports(commands).await {
        let mut part = Tally {
            operations: parsed["operations"].as_u64().unwrap_or(0),
            ..Tally::default()
        };
        if let Some(kinds) = parsed["violations"].as_object() {
            for (kind, n) in kinds {
                part.violations
                    .insert(kind.clone(), n.as_u64().unwrap_or(0));
            }
        }
        tally.add(part);
    }
    tally
}

async fn clean_up(url: &str, plan: &Plan) {
    let mut data = data(url).await;
    let mut keys: Vec<String> = [
        "inside", "fence", "waiting", "readers", "writers", "in-use", "uses", "stats",
    ]
    .iter()
    .map(|name| plan.key(name))
    .collect();
    if plan.primitive == Primitive::Latch {
        keys.extend((0..plan.rounds()).map(|r| plan.key(&format!("arrived:{r}"))));
    }
    for chunk in keys.chunks(500) {
        let _: () = data.del(chunk).await.expect("clean up");
    }
}

/// One process's part: `operations` operations over the plan's tasks.
async fn work(locks: &LockClient, url: &str, plan: &Plan, operations: u64) -> Tally {
    let violations: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let data = data(url).await;
    let mut handles = Vec::new();
    for task in 0..plan.tasks {
        let (locks, data, plan, violations) = (
            locks.clone(),
            data.clone(),
            plan.clone(),
            violations.clone(),
        );
        let count = match plan.primitive {
            // Every task takes part in every round.
            Primitive::Latch => plan.rounds(),
            _ => share(operations, plan.tasks, task),
        };
        handles.push(tokio::spawn(async move {
            let mut task = Task::new(locks, data, plan, task);
            for i in 0..count {
                task.operation(i).await;
            }
            let mut all = violations.lock().unwrap_or_else(PoisonError::into_inner);
            for (kind, n) in task.found {
                *all.entry(kind.to_owned()).or_default() += n;
            }
            count
        }));
    }
    let mut done = 0;
    for handle in handles {
        done += tokio::time::timeout(Duration::from_secs(600), handle)
            .await
            .expect("worker stalled")
            .expect("stress task panicked");
    }
    let violations =
        std::mem::take(&mut *violations.lock().unwrap_or_else(PoisonError::into_inner));
    Tally {
        operations: done,
        violations,
    }
}
