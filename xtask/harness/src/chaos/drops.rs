//! Scenario 8's worker (`chaos worker --drop-acquires N`): N acquire futures dropped at random
//! points (on the wire, queued behind a holder, just granted), with a contender in the same
//! process taking the key on and off so that drops land in every state. Then: the next acquire
//! must get the key at once (no stuck waiter), and the runtime's task count must come back to
//! where it was (no leaked task). Events: `baseline <tasks>`, `drops <n> <dropped> <granted>
//! <errors> <baseline tasks> <tasks after> <next acquire ms>`, `done`. The coordinator then
//! looks at the server for entries left behind, while this process is still connected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use example_support::backend::BackendKind;
use lock_core::{LeaseMode, LockClient};
use tokio::time::{sleep, timeout, Instant};

use super::random::Random;
use super::worker::{connect, event};

/// How long the process stays after `done`, connected, while the server is inspected.
const STAY: Duration = Duration::from_secs(3);

/// Runs the workload; the exit code.
pub async fn run(
    kind: BackendKind,
    url: &str,
    key: &str,
    ttl: Duration,
    count: u64,
    abandon: bool,
) -> i32 {
    let (dropper, contender) = match (
        connect(kind, url, ttl, None).await,
        connect(kind, url, ttl, None).await,
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            event("error", &format!("connect: {}", e.with_causes()));
            return 3;
        }
    };
    // Warm up both clients (background tasks a backend starts on first use are not leaks), and
    // time an acquire with nobody else around: drops are spread over 0..3 of those.
    let mut uncontended = Vec::new();
    for client in [&dropper, &contender, &dropper, &dropper, &dropper] {
        let started = Instant::now();
        match client
            .lock(key)
            .acquire_within(Duration::from_secs(10))
            .await
        {
            Ok(Some(guard)) => {
                uncontended.push(started.elapsed());
                guard.release().await.ok();
            }
            other => {
                event("error", &format!("warm-up acquire: {other:?}"));
                return 3;
            }
        }
    }
    uncontended.sort();
    let spread = (uncontended[uncontended.len() / 2] * 3).max(Duration::from_micros(300));
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let baseline = tasks();
    event("baseline", &baseline.to_string());

    let stop = Arc::new(AtomicBool::new(false));
    let contending = tokio::spawn(contend(contender, key.to_owned(), stop.clone()));
    let mut random = Random::seeded();
    let (mut dropped, mut granted, mut errors) = (0u64, 0u64, 0u64);
    // A vanished client's grants (`--unsafe-long-lease`) outlive the run's lease tenfold.
    let lease = LeaseMode::watchdog(if abandon { ttl * 10 } else { ttl });
    for i in 0..count {
        let at = Duration::from_micros(random.below(spread.as_micros() as u64));
        let acquire = dropper
            .lock(key)
            .lease(lease)
            .acquire_within(Duration::from_millis(50));
        match timeout(at, acquire).await {
            Err(_) => dropped += 1,
            Ok(Ok(Some(guard))) => {
                granted += 1;
                if abandon {
                    guard.abandon();
                } else if random.below(2) == 0 {
                    drop(guard);
                } else {
                    guard.release().await.ok();
                }
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                errors += 1;
                if errors <= 3 {
                    event("error", &format!("acquire: {}", e.with_causes()));
                }
            }
        }
        if (i + 1) % 1000 == 0 {
            event("progress", &(i + 1).to_string());
        }
    }
    stop.store(true, Ordering::SeqCst);
    contending.await.ok();

    // No stuck waiter: the key is free, or frees within its lease.
    let started = Instant::now();
    let next_ms = match dropper.lock(key).acquire_within(ttl * 3).await {
        Ok(Some(guard)) => {
            let waited = started.elapsed().as_secs_f64() * 1000.0;
            guard.release().await.ok();
            format!("{waited:.1}")
        }
        Ok(None) => "none".to_owned(),
        Err(e) => {
            event("error", &format!("next acquire: {}", e.with_causes()));
            "error".to_owned()
        }
    };
    // No leaked task: clean-ups and background releases end within a few seconds.
    let settled = Instant::now();
    while tasks() > baseline && settled.elapsed() < Duration::from_secs(5) {
        sleep(Duration::from_millis(20)).await;
    }
    event(
        "drops",
        &format!(
            "{count} {dropped} {granted} {errors} {baseline} {} {next_ms}",
            tasks()
        ),
    );
    event("done", "");
    sleep(STAY).await;
    0
}

/// Takes the key for 0–3 ms, lets go for 0–2 ms, until `stop`.
async fn contend(client: LockClient, key: String, stop: Arc<AtomicBool>) {
    let mut random = Random::seeded();
    while !stop.load(Ordering::SeqCst) {
        if let Ok(Some(guard)) = client
            .lock(&key)
            .acquire_within(Duration::from_millis(200))
            .await
        {
            sleep(Duration::from_micros(random.below(3000))).await;
            guard.release().await.ok();
        }
        sleep(Duration::from_micros(random.below(2000))).await;
    }
}
