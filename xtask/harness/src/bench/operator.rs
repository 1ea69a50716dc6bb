//! `bench --only operator`: what the operator's calls cost on a backend, beside the lock's own
//! uncontended acquire+release on the same client: `inspect` of a held key, a forced release
//! (with its audit record), and a listing page of up to 100 keys.

use std::time::{Duration, Instant};

use lock_core::LockClient;
use serde_json::{json, Value};

use super::floor::Summary;

/// Measures `rounds` of each call on `locks` (a client of the backend under test) and prints
/// them; the JSON report.
pub async fn run(locks: &LockClient, backend: &str, rounds: usize) -> Value {
    let admin = locks.admin();
    let prefix = format!("op-bench-{}:", std::process::id());
    // Warm up: scripts loaded, connections open.
    for i in 0..20 {
        let key = format!("{prefix}warm:{i}");
        let guard = locks.lock(&key).await.expect("acquire");
        admin.inspect(&key).await.expect("inspect");
        guard.release().await.expect("release");
    }
    let (mut cycle, mut inspect, mut force) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let key = format!("{prefix}{i}");
        let started = Instant::now();
        let guard = locks.lock(&key).await.expect("acquire");
        guard.release().await.expect("release");
        cycle.push(started.elapsed());

        let held = locks.lock(&key).await.expect("acquire");
        let started = Instant::now();
        let seen = admin.inspect(&key).await.expect("inspect");
        inspect.push(started.elapsed());
        assert_eq!(seen.holders.len(), 1);

        let started = Instant::now();
        admin
            .force_release(&key, "bench", "bench")
            .await
            .expect("force release");
        force.push(started.elapsed());
        drop(held);
    }
    // A page of up to 100 keys, 100 held.
    let mut guards = Vec::new();
    for i in 0..100 {
        guards.push(
            locks
                .lock(format!("{prefix}page:{i}"))
                .await
                .expect("acquire"),
        );
    }
    let mut list = Vec::new();
    for _ in 0..rounds.clamp(1, 20) {
        let started = Instant::now();
        let mut found = 0;
        let mut cursor = None;
        loop {
            let page = admin
                .list(&format!("{prefix}page:"), cursor.as_ref(), 100)
                .await
                .expect("list");
            found += page.keys.len();
            match page.next {
                Some(next) if found < 100 => cursor = Some(next),
                _ => break,
            }
        }
        list.push(started.elapsed());
        assert!(found >= 100, "listed {found} of 100");
    }
    for guard in guards {
        guard.release().await.expect("release");
    }
    let (cycle, inspect, force, list) = (
        Summary::of(&mut cycle),
        Summary::of(&mut inspect),
        Summary::of(&mut force),
        Summary::of(&mut list),
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("operator's calls on {backend} ({rounds} rounds; p50 / p99)");
    for (name, s) in [
        ("acquire+release (the lock)", cycle),
        ("inspect a held key", inspect),
        ("force release + audit", force),
        ("list 100 held keys", list),
    ] {
        println!(
            "  {name:<28} p50 {:>9.0} µs  p99 {:>9.0} µs  ({:.2}× the lock's cycle)",
            us(s.p50),
            us(s.p99),
            us(s.p50) / us(cycle.p50)
        );
    }
    json!({
        "backend": backend,
        "rounds": rounds,
        "cycle_p50_us": us(cycle.p50), "cycle_p99_us": us(cycle.p99),
        "inspect_p50_us": us(inspect.p50), "inspect_p99_us": us(inspect.p99),
        "force_release_p50_us": us(force.p50), "force_release_p99_us": us(force.p99),
        "list_100_p50_us": us(list.p50), "list_100_p99_us": us(list.p99),
    })
}
