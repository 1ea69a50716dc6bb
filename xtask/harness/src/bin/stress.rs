//! `cargo xtask stress --backend memory|redis`: P processes × T tasks contend on K keys; every
//! critical section does a non-atomic read-modify-write and counts overlaps. Prints
//! `critical sections: N  violations: V` and exits non-zero when V > 0 or N falls short.
//!
//! With a cross-process backend (Redis, and every server backend), the coordinator (this
//! program without `--worker`) starts P copies of itself as workers, which lock through the
//! chosen backend and keep the shared counters in Redis. Each critical section:
//! 1. `INCR` the key's "inside" counter: a result above 1 means another holder is inside too;
//! 2. reads the key's counter and last fencing token, checks the token increased, and writes
//!    counter + 1 and the token back in a separate command (a lost update if two overlap);
//! 3. `DECR`s "inside".
//!
//! At the end the coordinator adds overlaps, fence regressions and lost updates
//! (`sections − Σ counters`) into the violation count. With the memory backend the same runs
//! as tasks of one process on in-process counters. `--no-lock` skips the lock, to show that the
//! checks do catch overlaps.
//!
//! `--primitive fair|rw|semaphore|latch` hammers that primitive instead, with its own
//! invariant counters and `--break-check` (see `lock_harness::stress::primitive`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use example_support::backend::{redis_url, BackendKind};
use example_support::flags::{usage_error, Flags};
use lock_core::{LockClient, MemoryBackend};
use lock_harness::connect;
use lock_harness::stress::worker_reports::worker_reports;
use redis::AsyncCommands;
use tokio::time::Instant;

const FLAGS: &[&str] = &[
    "backend",
    "processes",
    "tasks",
    "keys",
    "sections",
    "redis-url",
    "worker",
    "run-id",
    "no-lock",
    // The primitive runs' (`lock_harness::stress::primitive`).
    "primitive",
    "break-check",
    "permits",
    "share",
    "faults",
    "worker-index",
];

#[derive(Clone)]
struct Plan {
    tasks: u64,
    keys: u64,
    sections: u64,
    locked: bool,
}

#[derive(Default, Debug)]
struct Tally {
    sections: u64,
    violations: u64,
}

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(FLAGS);
    if flags.get("primitive").is_some() {
        lock_harness::stress::primitive::run(&flags, &redis_url(&flags)).await;
        return;
    }
    let number = |name, default| flags.number_or_exit(name, default);
    let kind = flags.backend_or_exit();
    let plan = Plan {
        tasks: number("tasks", 8).max(1),
        keys: number("keys", 4).max(1),
        sections: number("sections", 20_000),
        locked: flags.get("no-lock").is_none(),
    };
    let url = redis_url(&flags);

    if flags.get("worker").is_some() {
        let run_id = flags
            .get("run-id")
            .unwrap_or_else(|| usage_error("--worker needs --run-id"));
        let tally = worker(kind, &url, run_id, &plan).await;
        println!(
            "{{\"sections\":{},\"violations\":{}}}",
            tally.sections, tally.violations
        );
        return;
    }

    let processes = match kind {
        BackendKind::Memory => 1,
        _ => number("processes", 4).max(1),
    };
    println!(
        "stress: {} backend, {processes} process(es) × {} tasks on {} keys, {} critical sections{}",
        kind.name(),
        plan.tasks,
        plan.keys,
        plan.sections,
        if plan.locked {
            ""
        } else {
            ", WITHOUT the lock"
        }
    );
    let started = Instant::now();
    let tally = match kind {
        BackendKind::Memory => memory_run(&plan).await,
        _ => process_run(kind, &url, processes, &plan, &flags).await,
    };
    println!(
        "critical sections: {}  violations: {}  ({:.0} sections/s over {:.2?})",
        tally.sections,
        tally.violations,
        tally.sections as f64 / started.elapsed().as_secs_f64(),
        started.elapsed()
    );
    if tally.violations > 0 || tally.sections < plan.sections {
        std::process::exit(1);
    }
}

/// Splits `total` sections over `parts` as evenly as possible.
fn share(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

async fn memory_run(plan: &Plan) -> Tally {
    let locks = LockClient::builder(MemoryBackend::new())
        .namespace("stress")
        .build()
        .unwrap();
    let counters: Arc<Vec<(AtomicU64, AtomicU64, AtomicU64)>> =
        Arc::new((0..plan.keys).map(|_| Default::default()).collect());
    let violations = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for task in 0..plan.tasks {
        let (locks, counters, violations, plan) = (
            locks.clone(),
            counters.clone(),
            violations.clone(),
            plan.clone(),
        );
        handles.push(tokio::spawn(async move {
            for i in 0..share(plan.sections, plan.tasks, task) {
                let k = (task + i) % plan.keys;
                let guard = if plan.locked {
                    Some(locks.lock(format!("key:{k}")).await.unwrap())
                } else {
                    None
                };
                let (inside, counter, last_fence) = &counters[k as usize];
                if inside.fetch_add(1, Ordering::SeqCst) > 0 {
                    violations.fetch_add(1, Ordering::SeqCst);
                }
                let fence = guard.as_ref().map_or(0, |g| g.fencing_token().get());
                let seen = counter.load(Ordering::SeqCst);
                if plan.locked && last_fence.load(Ordering::SeqCst) >= fence {
                    violations.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await; // widen the read-modify-write window
                counter.store(seen + 1, Ordering::SeqCst);
                last_fence.store(fence, Ordering::SeqCst);
                inside.fetch_sub(1, Ordering::SeqCst);
                if let Some(guard) = guard {
                    guard.release().await.unwrap();
                }
            }
        }));
    }
    for handle in handles {
        handle.await.expect("stress task panicked");
    }
    let counted: u64 = counters
        .iter()
        .map(|(_, c, _)| c.load(Ordering::SeqCst))
        .sum();
    Tally {
        sections: plan.sections,
        violations: violations.load(Ordering::SeqCst) + plan.sections.saturating_sub(counted),
    }
}

async fn process_run(
    kind: BackendKind,
    url: &str,
    processes: u64,
    plan: &Plan,
    flags: &Flags,
) -> Tally {
    let run_id = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let exe = std::env::current_exe().expect("own path");
    let mut commands = Vec::new();
    for p in 0..processes {
        let mut command = tokio::process::Command::new(&exe);
        command
            .args([
                "--worker",
                "--backend",
                kind.name(),
                "--run-id",
                &run_id,
                "--redis-url",
                url,
            ])
            .args([
                "--tasks",
                &plan.tasks.to_string(),
                "--keys",
                &plan.keys.to_string(),
            ])
            .args([
                "--sections",
                &share(plan.sections, processes, p).to_string(),
            ]);
        if flags.get("no-lock").is_some() {
            command.arg("--no-lock");
        }
        commands.push(command);
    }
    let mut tally = Tally::default();
    for parsed in worker_reports(commands).await {
        tally.sections += parsed["sections"].as_u64().unwrap_or(0);
        tally.violations += parsed["violations"].as_u64().unwrap_or(0);
    }
    let mut redis = redis_connection(url).await;
    let mut counted = 0u64;
    for k in 0..plan.keys {
        let value: Option<u64> = redis
            .hget(data_key(&run_id, k), "counter")
            .await
            .expect("read counter");
        counted += value.unwrap_or(0);
        let _: () = redis
            .del(&[data_key(&run_id, k), inside_key(&run_id, k)])
            .await
            .expect("clean up");
    }
    tally.violations += tally.sections.saturating_sub(counted);
    tally
}

fn data_key(run: &str, k: u64) -> String {
    format!("stress:{run}:data:{k}")
}

fn inside_key(run: &str, k: u64) -> String {
    format!("stress:{run}:inside:{k}")
}

async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap_or_else(|e| usage_error(&format!("bad Redis URL: {e}")))
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot reach Redis at {url}: {e}")))
}

async fn worker(kind: BackendKind, url: &str, run_id: &str, plan: &Plan) -> Tally {
    let locks = connect(
        kind,
        url,
        &format!("stress-{run_id}"),
        &MemoryBackend::new(),
    )
    .await
    .unwrap_or_else(|e| usage_error(&format!("cannot reach the {} backend: {e}", kind.name())))
    .locks;
    let data = redis_connection(url).await;
    let violations = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for task in 0..plan.tasks {
        let (locks, mut data, violations, plan, run_id) = (
            locks.clone(),
            data.clone(),
            violations.clone(),
            plan.clone(),
            run_id.to_owned(),
        );
        handles.push(tokio::spawn(async move {
            let mut done = 0;
            for i in 0..share(plan.sections, plan.tasks, task) {
                let k = (task + i + u64::from(std::process::id())) % plan.keys;
                let guard = if plan.locked {
                    Some(locks.lock(format!("key:{k}")).await.expect("acquire"))
                } else {
                    None
                };
                let inside: u64 = data.incr(inside_key(&run_id, k), 1).await.expect("incr");
                if inside > 1 {
                    violations.fetch_add(1, Ordering::SeqCst);
                }
                let (counter, last_fence): (Option<u64>, Option<u64>) = redis::cmd("HMGET")
                    .arg(data_key(&run_id, k))
                    .arg("counter")
                    .arg("fence")
                    .query_async(&mut data)
                    .await
                    .expect("read");
                let fence = guard.as_ref().map_or(0, |g| g.fencing_token().get());
                if plan.locked && last_fence.is_some_and(|last| last >= fence) {
                    violations.fetch_add(1, Ordering::SeqCst);
                }
                let _: () = data
                    .hset_multiple(
                        data_key(&run_id, k),
                        &[("counter", counter.unwrap_or(0) + 1), ("fence", fence)],
                    )
                    .await
                    .expect("write");
                let _: i64 = data.decr(inside_key(&run_id, k), 1).await.expect("decr");
                if let Some(guard) = guard {
                    if !guard.release().await.expect("release") {
                        violations.fetch_add(1, Ordering::SeqCst); // the lease was gone before we finished
                    }
                }
                done += 1;
            }
            done
        }));
    }
    let mut sections = 0;
    for handle in handles {
        sections += tokio::time::timeout(Duration::from_secs(600), handle)
            .await
            .expect("worker stalled")
            .expect("stress task panicked");
    }
    Tally {
        sections,
        violations: violations.load(Ordering::SeqCst),
    }
}
