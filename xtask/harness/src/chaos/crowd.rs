//! Scenario 10's worker (`chaos worker --waiters N --clients C`): N tasks spread over C clients
//! (each on a connection of its own) queue on one key behind a gate holder, then take it one
//! after another, each holding it `hold`. Mutual exclusion is counted in the process; the
//! handoff is the time from one holder's release to the next one's grant (one process, one
//! clock). With `--unsafe-poll` the tasks poll `try_acquire` every 5 ms instead of waiting for
//! a push wake-up: the server's work per handoff then grows with the crowd, which the
//! coordinator's O(1) check must catch.
//!
//! Events: `ready` (then the worker waits `--start-delay-ms`), `queued <n>`, `gate <the server's
//! request count as the gate opens>`, `crowd <sections> <overlaps> <errors> <handoff p50 ms>
//! <handoff p99 ms> <handoff max ms> <RSS before KiB> <RSS once queued KiB> <RSS peak KiB>
//! <ms>`, `handoffs <ms,ms,...>`,
//! `done`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use example_support::backend::BackendKind;
use lock_core::backend::LeaseKind;
use lock_core::{LockClient, LockGuard};
use tokio::time::{sleep, Instant};

use super::report::p50_p99;
use super::target::Target;
use super::worker::{connect, event};

/// The crowd's shape.
#[derive(Clone, Copy, Debug)]
pub struct Crowd {
    /// Waiting tasks.
    pub waiters: usize,
    /// Clients they are spread over.
    pub clients: usize,
    /// How long each holds the key.
    pub hold: Duration,
    /// The lease.
    pub ttl: Duration,
    /// Poll instead of waiting for wake-ups (`--unsafe-poll`).
    pub poll: bool,
}

/// Runs the workload, after `start_delay`; the exit code.
pub async fn run(
    kind: BackendKind,
    url: &str,
    key: &str,
    crowd: &Crowd,
    start_delay: Duration,
) -> i32 {
    let mut clients = Vec::new();
    for _ in 0..crowd.clients {
        match connect(kind, url, crowd.ttl, None).await {
            Ok(client) => clients.push(client),
            Err(e) => {
                event("error", &format!("connect: {}", e.with_causes()));
                return 3;
            }
        }
    }
    for client in &clients {
        if let Ok(Some(guard)) = client.lock(key).try_acquire().await {
            guard.release().await.ok();
        }
    }
    event("ready", "");
    sleep(start_delay).await;
    let rss_before = rss_kib("VmRSS");
    let started = Instant::now();
    let Ok(Some(gate)) = clients[0].lock(key).try_acquire().await else {
        event("error", "the gate holder could not take the key");
        return 3;
    };
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let sections = Arc::new(Mutex::new(Vec::with_capacity(crowd.waiters)));
    let tasks: Vec<_> = (0..crowd.waiters)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            let (key, crowd) = (key.to_owned(), *crowd);
            let (inside, overlaps, errors, sections) = (
                inside.clone(),
                overlaps.clone(),
                errors.clone(),
                sections.clone(),
            );
            tokio::spawn(async move {
                let guard = match take(&client, &key, &crowd).await {
                    Ok(Some(guard)) => guard,
                    failed => {
                        // The first few failures say why.
                        if errors.fetch_add(1, Ordering::SeqCst) < 3 {
                            let why = failed.err().unwrap_or_else(|| "no grant in time".into());
                            event("error", &format!("waiter: {why}"));
                        }
                        return;
                    }
                };
                let granted = Instant::now();
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                sleep(crowd.hold).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                let released = Instant::now();
                if guard.release().await.is_err() {
                    errors.fetch_add(1, Ordering::SeqCst);
                }
                sections
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((granted, released));
            })
        })
        .collect();
    // Every waiter queued before the gate opens (where the store keeps a queue to count).
    let queued = if crowd.poll {
        sleep(Duration::from_secs(1)).await;
        None
    } else {
        wait_until_queued(&clients[0], key, crowd.waiters).await
    };
    event(
        "queued",
        &queued.map_or("unknown".to_owned(), |n| n.to_string()),
    );
    // What the crowd costs to keep waiting (the peak, while it queued, is reported too).
    let rss_queued = rss_kib("VmRSS");
    // The server's request count as the handoffs begin (the queueing is not theirs).
    match Target::new(kind, url).commands().await {
        Ok(n) => event("gate", &n.to_string()),
        Err(e) => event("error", &format!("the server's request count: {e}")),
    }
    let gate_released = Instant::now();
    gate.release().await.ok();
    for task in tasks {
        task.await.ok();
    }
    let elapsed = started.elapsed();
    let mut sections = std::mem::take(&mut *sections.lock().unwrap_or_else(|e| e.into_inner()));
    sections.sort_by_key(|(granted, _)| *granted);
    let mut handoffs = Vec::with_capacity(sections.len());
    let mut previous_release = gate_released;
    for (granted, released) in &sections {
        handoffs.push(
            granted
                .saturating_duration_since(previous_release)
                .as_secs_f64()
                * 1000.0,
        );
        previous_release = *released;
    }
    let (p50, p99) = p50_p99(&handoffs).unwrap_or((0.0, 0.0));
    let max = handoffs.iter().copied().fold(0.0, f64::max);
    event(
        "crowd",
        &format!(
            "{} {} {} {p50:.2} {p99:.2} {max:.2} {rss_before} {rss_queued} {} {}",
            sections.len(),
            overlaps.load(Ordering::SeqCst),
            errors.load(Ordering::SeqCst),
            rss_kib("VmHWM"),
            elapsed.as_millis()
        ),
    );
    let samples: Vec<String> = handoffs.iter().map(|h| format!("{h:.3}")).collect();
    event("handoffs", &samples.join(","));
    event("done", "");
    0
}

/// One waiter's grant: a push wait, or (`--unsafe-poll`) a `try_acquire` every 5 ms.
async fn take(client: &LockClient, key: &str, crowd: &Crowd) -> Result<Option<LockGuard>, String> {
    let limit = Duration::from_secs(120);
    if !crowd.poll {
        return client
            .lock(key)
            .acquire_within(limit)
            .await
            .map_err(|e| e.with_causes());
    }
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(Some(guard)) = client.lock(key).try_acquire().await {
            return Ok(Some(guard));
        }
        sleep(Duration::from_millis(5)).await;
    }
    Ok(None)
}

/// Waits (up to 20 s) until `waiters` wait in the store's queue; `None` where the store keeps
/// no queue to count (SQL, or polling waiters): then it gives them a fixed 2 s.
async fn wait_until_queued(client: &LockClient, key: &str, waiters: usize) -> Option<usize> {
    let started = Instant::now();
    loop {
        match client.queue_length(LeaseKind::Exclusive, key).await {
            Ok(n) if n >= waiters => return Some(n),
            Ok(n) if started.elapsed() > Duration::from_secs(20) => return Some(n),
            Ok(_) => sleep(Duration::from_millis(20)).await,
            Err(_) => {
                sleep(Duration::from_secs(2)).await;
                return None;
            }
        }
    }
}

/// A `/proc/self/status` figure in KiB (`VmRSS` now, `VmHWM` the peak); 0 where unreadable.
fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .trim_start_matches(':')
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}
