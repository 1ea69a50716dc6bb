//! `cargo xtask bench --backend redis-cluster`: the lock's rate from 64 tasks on distinct keys
//! on the stack's Redis Cluster (3 primaries) against the same on the stack's one Redis, in
//! alternating rounds of one run, and what each server spends per operation.
//!
//! The primaries share this machine's cores with each other, with the single Redis and with
//! the bench itself, so the ratio here is bounded by the cores, not by the cluster: the servers'
//! CPU per operation (`INFO cpu`, summed over the primaries) is printed beside it, from which
//! the rate of N primaries on machines of their own can be read (see docs/benchmarks.md).

use std::time::Duration;

use lock_core::{LockClient, RedisBackend};
use serde_json::{json, Value};

use crate::bench::cpu::redis_seconds;
use crate::bench::floor::{concurrent_pairs, CONCURRENT_TASKS};
use crate::shared::cluster_nodes::cluster_primaries;

/// Alternating rounds of each figure.
const ROUNDS: usize = 3;

/// Measures, prints and returns the figures for the report.
pub async fn run(single_url: &str, cluster_urls: &[String], window: Duration) -> Value {
    let namespace = format!("bench-cluster-{}", std::process::id());
    let single = LockClient::builder(RedisBackend::connect(single_url).await.expect("one Redis"))
        .namespace(namespace.as_str())
        .build()
        .expect("client");
    let cluster = LockClient::builder(
        RedisBackend::builder_cluster(cluster_urls.iter().cloned())
            .connect()
            .await
            .expect("the cluster"),
    )
    .namespace(namespace.as_str())
    .build()
    .expect("client");
    let primaries = primaries(&cluster_urls[0]).await;
    println!(
        "bench: redis-cluster backend ({} primaries: {}), {} s windows\n",
        primaries.len(),
        primaries.join(", "),
        window.as_secs()
    );
    for locks in [&single, &cluster] {
        for i in 0..200 {
            let guard = locks.lock(format!("warm:{i}")).await.expect("acquire");
            guard.release().await.expect("release");
        }
    }
    let (mut single_rates, mut cluster_rates) = (Vec::new(), Vec::new());
    let (mut single_cpu, mut cluster_cpu) = (0.0, 0.0);
    let (mut single_ops, mut cluster_ops) = (0.0, 0.0);
    for _ in 0..ROUNDS {
        let before = redis_seconds(&[single_url.to_owned()]).await;
        let rate = concurrent_pairs(&single, window).await;
        single_cpu += redis_seconds(&[single_url.to_owned()]).await - before;
        single_ops += rate * window.as_secs_f64();
        single_rates.push(rate);

        let before = redis_seconds(&primaries).await;
        let rate = concurrent_pairs(&cluster, window).await;
        cluster_cpu += redis_seconds(&primaries).await - before;
        cluster_ops += rate * window.as_secs_f64();
        cluster_rates.push(rate);
    }
    let (single_rate, cluster_rate) = (median(&mut single_rates), median(&mut cluster_rates));
    let scale = cluster_rate / single_rate;
    let single_us = single_cpu / single_ops * 1e6;
    let cluster_us = cluster_cpu / cluster_ops * 1e6;
    println!(
        "{CONCURRENT_TASKS} tasks, distinct keys, {} primaries  {cluster_rate:>10.0} acquire+release/s",
        primaries.len()
    );
    println!("  one Redis (batching on)          {single_rate:>10.0} acquire+release/s");
    println!(
        "  {} primaries / 1: {scale:.2}×  (medians of {ROUNDS} alternating rounds; goal ≥ 2 where each primary has cores of its own)",
        primaries.len()
    );
    println!(
        "  server CPU per acquire+release: {cluster_us:.1} µs over the primaries, {single_us:.1} µs on one Redis"
    );
    json!({
        "primaries": primaries.len(),
        "cluster_pairs_per_s": cluster_rate,
        "single_pairs_per_s": single_rate,
        "primaries_over_one": scale,
        "cluster_server_cpu_us_per_pair": cluster_us,
        "single_server_cpu_us_per_pair": single_us,
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The `redis://host:port/` of every primary of the cluster that `url` belongs to.
async fn primaries(url: &str) -> Vec<String> {
    let mut connection = redis::Client::open(url)
        .expect("node URL")
        .get_multiplexed_async_connection()
        .await
        .expect("a cluster node");
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut connection)
        .await
        .expect("CLUSTER NODES");
    cluster_primaries(&nodes)
        .into_iter()
        .map(|(address, _)| format!("redis://{address}/"))
        .collect()
}
