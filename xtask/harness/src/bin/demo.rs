//! `cargo xtask demo`: many tasks contend for a handful of locks on the memory backend, and the
//! run prints what happened: acquisitions, fencing tokens in order, waits and violations.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use example_support::backend::redis_url;
use example_support::flags::{usage_error, Flags};
use lock_core::MemoryBackend;
use lock_harness::{connect, Percentiles};
use tokio::time::Instant;

#[derive(Default)]
struct KeyLog {
    fences: Vec<u64>,
    waits: Vec<Duration>,
    inside: usize,
    violations: usize,
}

#[tokio::main]
async fn main() {
    let flags = Flags::of_process(&["backend", "tasks", "keys", "rounds", "redis-url"]);
    let kind = flags.backend_or_exit();
    let tasks = flags.number_or_exit("tasks", 32);
    let keys = flags.number_or_exit("keys", 4).max(1);
    let rounds = flags.number_or_exit("rounds", 10);

    println!(
        "demo: {tasks} tasks × {rounds} rounds contend for {keys} locks on the {} backend",
        kind.name()
    );
    let memory = MemoryBackend::new();
    let namespace = format!("demo-{}", std::process::id());
    let log: Arc<Mutex<BTreeMap<String, KeyLog>>> = Arc::default();
    let overlapping = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let connected = connect(kind, &redis_url(&flags), &namespace, &memory)
            .await
            .unwrap_or_else(|e| usage_error(&format!("cannot connect: {e}")));
        let (log, overlapping) = (log.clone(), overlapping.clone());
        handles.push(tokio::spawn(async move {
            for round in 0..rounds {
                let key = format!("account:{}", (task + round) % keys);
                let asked = Instant::now();
                let guard = connected.locks.lock(&key).await?;
                let waited = asked.elapsed();
                {
                    let mut log = log
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let entry = log.entry(key.clone()).or_default();
                    entry.inside += 1;
                    if entry.inside > 1 {
                        entry.violations += 1;
                        overlapping.fetch_add(1, Ordering::SeqCst);
                    }
                    entry.fences.push(guard.fencing_token().get());
                    entry.waits.push(waited);
                }
                // The protected work: long enough that others queue behind it.
                tokio::time::sleep(Duration::from_millis(2)).await;
                if let Some(entry) = log
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_mut(&key)
                {
                    entry.inside -= 1;
                }
                guard.release().await?;
            }
            Ok::<_, lock_core::LockError>(())
        }));
    }
    for handle in handles {
        if let Err(e) = handle.await.expect("demo task panicked") {
            usage_error(&format!("lock error: {e}"));
        }
    }
    let elapsed = started.elapsed();

    let log = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // At most 100 columns: waits in ms, the first fencing tokens of each lock in grant order.
    println!(
        "\n{:<12} {:>5} {:>11} {:>11} {:>8} {:>11}  first fences granted",
        "lock", "held", "wait p50 ms", "wait p99 ms", "overlaps", "fences rise"
    );
    let mut total = 0;
    let mut all_increasing = true;
    for (key, entry) in log.iter() {
        let increasing = entry.fences.windows(2).all(|w| w[0] < w[1]);
        all_increasing &= increasing;
        total += entry.fences.len();
        let waits = Percentiles::of(&mut entry.waits.clone());
        let first: Vec<String> = entry.fences.iter().take(6).map(u64::to_string).collect();
        println!(
            "{key:<12} {:>5} {:>11.1} {:>11.1} {:>8} {:>11}  {} …",
            entry.fences.len(),
            waits.p50.as_secs_f64() * 1e3,
            waits.p99.as_secs_f64() * 1e3,
            entry.violations,
            if increasing { "yes" } else { "NO" },
            first.join(" "),
        );
    }
    let violations = overlapping.load(Ordering::SeqCst);
    println!("\nacquisitions: {total}  violations: {violations}  fencing tokens strictly increasing: {}  in {elapsed:.2?}",
        if all_increasing { "yes" } else { "NO" });
    if violations > 0 || !all_increasing || total as u64 != tasks * rounds {
        std::process::exit(1);
    }
}
