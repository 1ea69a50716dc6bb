//! The etcd contention figure of `cargo xtask bench --backend etcd`: [`WORKERS`] tasks, each on
//! its own [`EtcdBackend`] (its own gRPC channel, as separate processes would have), take turns
//! on one key for [`SECTIONS`] critical sections in all.
//!
//! Reported: sections per second and the acquire latency (p50, p99) of every section, beside
//! the raw floor measured in the same run: one etcd `txn(put)` round trip in sequence (the
//! [`EtcdFloor`] op). A section needs at least an acquire and a release, two Raft writes, so
//! its floor is two round trips; the ratio says how many floors one section costs.
//! The report is printed and written to `target/bench/etcd_contention.json`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::{EtcdBackend, LockClient};
use serde_json::json;
use tokio::time::Instant;

use crate::bench::floor::{EtcdFloor, Floor, Summary};
use crate::{etcd_url, micros, Percentiles};

/// Tasks contending, each on its own client.
pub const WORKERS: usize = 8;
/// Critical sections in all.
pub const SECTIONS: usize = 2_000;
/// Raw round trips measured for the floor.
const FLOOR_OPS: usize = 500;

/// Runs the figure, prints it and writes its JSON report; returns the report.
pub async fn run() -> serde_json::Value {
    let floor = EtcdFloor::connect().await;
    floor.sequential(100).await;
    let floor_op = floor.sequential(FLOOR_OPS).await;
    let namespace = format!("bench-contention-{}", std::process::id());
    let mut clients = Vec::with_capacity(WORKERS);
    for _ in 0..WORKERS {
        let backend = EtcdBackend::connect(&etcd_url()).await.unwrap_or_else(|e| {
            example_support::flags::usage_error(&format!("cannot reach etcd: {e}"))
        });
        let locks = LockClient::builder(backend)
            .namespace(&namespace)
            .build()
            .unwrap_or_else(|e| example_support::flags::usage_error(&format!("lock client: {e}")));
        // Warm the channel and the backend's session before measuring.
        for i in 0..5 {
            let guard = locks.lock(format!("warm:{i}")).await.expect("acquire");
            guard.release().await.expect("release");
        }
        clients.push(locks);
    }
    let (elapsed, mut acquires) = contend(&clients).await;
    let acquire = Percentiles::of(&mut acquires);
    let sections_per_s = SECTIONS as f64 / elapsed.as_secs_f64();
    let floor_section = floor_op.times(2);
    let per_section = elapsed / SECTIONS as u32;
    let ratio = per_section.as_secs_f64() / floor_section.mean.as_secs_f64().max(1e-12);
    println!(
        "\netcd contention, {WORKERS} clients, one key, {SECTIONS} sections   {sections_per_s:>8.0} sections/s  \
         acquire p50 {:>10}  p99 {:>10}",
        micros(acquire.p50),
        micros(acquire.p99)
    );
    println!(
        "  floor: 2 × txn(put) round trip    mean {:>10}  p50 {:>10}  ({:.0} sections/s at the floor)  \
         ratio {ratio:.2}× (time per section vs floor)",
        micros(floor_section.mean),
        micros(floor_section.p50),
        1.0 / floor_section.mean.as_secs_f64().max(1e-12)
    );
    let report = report(sections_per_s, acquire, floor_op, ratio);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).ok();
    let path = dir.join("etcd_contention.json");
    match std::fs::write(
        &path,
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    ) {
        Ok(()) => println!("  written: {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
    report
}

/// Runs [`SECTIONS`] sections on one key from one task per client; returns the wall time and
/// every section's acquire latency.
async fn contend(clients: &[LockClient]) -> (Duration, Vec<Duration>) {
    let taken = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|locks| {
            let (locks, taken) = (locks.clone(), taken.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while taken.fetch_add(1, Ordering::Relaxed) < SECTIONS {
                    let start = Instant::now();
                    let guard = locks.lock("contended").await.expect("acquire");
                    samples.push(start.elapsed());
                    guard.release().await.expect("release");
                }
                samples
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(SECTIONS);
    for task in tasks {
        samples.extend(task.await.expect("contention task"));
    }
    (started.elapsed(), samples)
}

/// The JSON report of one run.
fn report(
    sections_per_s: f64,
    acquire: Percentiles,
    floor_op: Summary,
    ratio: f64,
) -> serde_json::Value {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    json!({
        "workers": WORKERS,
        "clients": WORKERS,
        "sections": SECTIONS,
        "sections_per_s": sections_per_s,
        "acquire_p50_us": us(acquire.p50),
        "acquire_p99_us": us(acquire.p99),
        "acquire_max_us": us(acquire.max),
        "floor": { "op": "txn(put)", "mean_us": us(floor_op.mean), "p50_us": us(floor_op.p50),
                   "p99_us": us(floor_op.p99), "per_section": "2 × op" },
        "ratio_section_time_vs_floor": ratio,
    })
}
