//! RedLock's figures (`cargo xtask bench --backend redlock`), in one run on the stack's five
//! RedLock nodes:
//!
//! - **`redlock/single`**: a 3-node RedLock's uncontended acquire+release against the same
//!   cycle on one node alone (a `RedisBackend` on the first node), in alternating rounds, the
//!   ratio a median of the rounds' ratios; beside it, rslock (a Rust RedLock crate, no
//!   fencing token) over the same 3 nodes against rslock on the first node, in the same rounds;
//! - **the 5-node fault runs**: the same cycle over five nodes reached through a TCP proxy of
//!   this bench's own ([`StallProxy`]), with none, then 2 nodes stalled (the proxy holds every
//!   byte, as a network that drops them would: the node's process runs on), then 3 stalled:
//!   an acquisition must fail within its budget and leave no lock key on any reachable node.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::{LockClient, RedLock, RedisBackend};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::bench::floor::Summary;
use crate::micros;

/// Rounds of the single-node vs 3-node comparison.
const ROUNDS: usize = 10;
/// How long one node may take to answer in the fault runs.
const NODE_TIMEOUT: Duration = Duration::from_millis(50);

/// Measures, prints and returns the figures for the report.
pub async fn run(urls: &[String], iterations: usize) -> Value {
    assert!(
        urls.len() >= 5,
        "the RedLock bench needs 5 nodes, got {}",
        urls.len()
    );
    let namespace = format!("bench-redlock-{}", std::process::id());
    let single = LockClient::builder(RedisBackend::connect(&urls[0]).await.expect("node 1"))
        .namespace(&namespace)
        .build()
        .expect("client");
    let three = LockClient::builder(redlock(&urls[..3], NODE_TIMEOUT).await)
        .namespace(&namespace)
        .build()
        .expect("client");
    cycles(&single, 200).await;
    cycles(&three, 200).await;
    let rslock_single = crate::bench::rslock_compare::manager(&urls[0]);
    let rslock_three = rslock::LockManager::new(urls[..3].to_vec());
    crate::bench::rslock_compare::warm_up(&rslock_single).await;
    crate::bench::rslock_compare::warm_up(&rslock_three).await;

    let per_round = (iterations / ROUNDS).max(1);
    let (mut singles, mut threes) = (Vec::new(), Vec::new());
    let (mut rs_singles, mut rs_threes) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            singles.push(cycles(&single, per_round).await);
            threes.push(cycles(&three, per_round).await);
            rs_singles.push(crate::bench::rslock_compare::cycles(&rslock_single, per_round).await);
            rs_threes.push(crate::bench::rslock_compare::cycles(&rslock_three, per_round).await);
        } else {
            rs_threes.push(crate::bench::rslock_compare::cycles(&rslock_three, per_round).await);
            rs_singles.push(crate::bench::rslock_compare::cycles(&rslock_single, per_round).await);
            threes.push(cycles(&three, per_round).await);
            singles.push(cycles(&single, per_round).await);
        }
    }
    let ratio_of = |ones: &[Summary], threes: &[Summary]| {
        median(
            ones.iter()
                .zip(threes)
                .map(|(s, t)| t.mean.as_secs_f64() / s.mean.as_secs_f64())
                .collect(),
        )
    };
    let ratio = ratio_of(&singles, &threes);
    let rslock_ratio = ratio_of(&rs_singles, &rs_threes);
    let (single_mean, three_mean) = (median_summary(&singles), median_summary(&threes));
    println!("redlock (independent Redis nodes), uncontended acquire+release, one task");
    line("one node (RedisBackend)", &single_mean);
    line("RedLock over 3 nodes", &three_mean);
    line("rslock on one node", &median_summary(&rs_singles));
    line("rslock over the 3 nodes", &median_summary(&rs_threes));
    println!("redlock/single: {ratio:.2}× (3-node RedLock acquire+release against one node's, median of {ROUNDS} rounds)");
    println!(
        "  rslock, the same comparison in the same rounds: {rslock_ratio:.2}× (no fencing token)"
    );

    // The fault runs: five nodes behind proxies this bench can stall.
    let mut proxies = Vec::new();
    for url in &urls[..5] {
        proxies.push(StallProxy::start(port_of(url)).await);
    }
    let proxied: Vec<String> = proxies
        .iter()
        .map(|p| format!("redis://127.0.0.1:{}/", p.port))
        .collect();
    let five = LockClient::builder(redlock(&proxied, NODE_TIMEOUT).await)
        .namespace(&namespace)
        .build()
        .expect("client");
    cycles(&five, 100).await;
    let runs = iterations.min(2_000);
    let healthy = cycles(&five, runs).await;
    proxies[0].stall(true);
    proxies[1].stall(true);
    let minority = cycles(&five, runs).await;
    proxies[2].stall(true);
    let started = Instant::now();
    let refused = five
        .lock("fault:majority")
        .acquire_within(Duration::from_secs(2))
        .await;
    let failed_after = started.elapsed();
    let mut left = 0;
    for url in &urls[3..5] {
        left += lock_keys(url).await;
    }
    for proxy in &proxies {
        proxy.stall(false);
    }
    println!(
        "5 nodes through a stalling TCP proxy (node timeout {} ms):",
        NODE_TIMEOUT.as_millis()
    );
    line("none stalled", &healthy);
    line("2 stalled: acquisitions go on", &minority);
    let verdict = match &refused {
        Err(error) if error.is_unavailable() && failed_after < NODE_TIMEOUT * 10 && left == 0 => {
            "PASS"
        }
        _ => "FAIL",
    };
    println!(
        "  3 stalled: acquire {} after {:.1} ms, lock keys left on the 2 reachable nodes: {left}  {verdict}",
        match &refused {
            Ok(Some(_)) => "GRANTED".to_owned(),
            Ok(None) => "timed out".to_owned(),
            Err(error) => format!("failed ({})", error.with_causes()),
        },
        failed_after.as_secs_f64() * 1e3
    );
    json!({
        "single_us": { "mean": micros(single_mean.mean), "p99": micros(single_mean.p99) },
        "redlock3_us": { "mean": micros(three_mean.mean), "p99": micros(three_mean.p99) },
        "redlock_single_ratio": ratio,
        "rslock_three_vs_one_ratio": rslock_ratio,
        "five_healthy_us": { "mean": micros(healthy.mean), "p99": micros(healthy.p99) },
        "five_two_stalled_us": { "mean": micros(minority.mean), "p99": micros(minority.p99) },
        "three_stalled_failed_ms": failed_after.as_secs_f64() * 1e3,
        "three_stalled_keys_left": left,
        "three_stalled_verdict": verdict,
    })
}

async fn redlock(urls: &[String], node_timeout: Duration) -> RedLock {
    let mut nodes = Vec::new();
    for url in urls {
        nodes.push(
            RedisBackend::builder(url.as_str())
                .response_timeout(Duration::from_millis(500))
                .connect()
                .await
                .expect("RedLock node"),
        );
    }
    RedLock::builder(nodes)
        .node_timeout(node_timeout)
        .build()
        .expect("RedLock")
}

/// `n` uncontended acquire+release cycles on 64 keys in turn.
async fn cycles(locks: &LockClient, n: usize) -> Summary {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("solo:{}", i % 64);
        let start = Instant::now();
        let guard = locks.lock(&key).await.expect("acquire");
        guard.release().await.expect("release");
        samples.push(start.elapsed());
    }
    Summary::of(&mut samples)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median round's mean, p50 and p99 (each the median of the rounds').
fn median_summary(rounds: &[Summary]) -> Summary {
    let pick = |f: fn(&Summary) -> Duration| {
        let mut values: Vec<Duration> = rounds.iter().map(f).collect();
        values.sort();
        values[values.len() / 2]
    };
    Summary {
        mean: pick(|s| s.mean),
        p50: pick(|s| s.p50),
        p99: pick(|s| s.p99),
    }
}

fn line(name: &str, summary: &Summary) {
    println!(
        "  {name:<34} mean {:>8.1} µs  p50 {:>8.1} µs  p99 {:>8.1} µs",
        summary.mean.as_secs_f64() * 1e6,
        summary.p50.as_secs_f64() * 1e6,
        summary.p99.as_secs_f64() * 1e6
    );
}

fn port_of(url: &str) -> u16 {
    url.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// Lock keys (`…}`, not counters) on the node at `url`.
async fn lock_keys(url: &str) -> usize {
    let mut admin = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*bench-redlock*")
        .query_async(&mut admin)
        .await
        .expect("KEYS");
    keys.iter().filter(|k| k.ends_with('}')).count()
}

/// A loopback TCP proxy to one node that can stall: while stalled it forwards no byte either
/// way (connections stay open; bytes wait in the socket buffers), as a network path that
/// drops everything would look to the client.
pub struct StallProxy {
    /// The port it listens on.
    pub port: u16,
    stalled: Arc<AtomicBool>,
    resumed: Arc<Notify>,
}

impl StallProxy {
    /// Listens on a free loopback port, forwarding to 127.0.0.1:`target`.
    pub async fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let stalled = Arc::new(AtomicBool::new(false));
        let resumed = Arc::new(Notify::new());
        let (s, r) = (stalled.clone(), resumed.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pipe(client_read, server_write, s.clone(), r.clone()));
                tokio::spawn(pipe(server_read, client_write, s.clone(), r.clone()));
            }
        });
        Self {
            port,
            stalled,
            resumed,
        }
    }

    /// Stalls (`true`) or resumes every connection through the proxy.
    pub fn stall(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::SeqCst);
        if !stalled {
            self.resumed.notify_waiters();
        }
    }
}

/// Copies `from` to `to`, holding each chunk while the proxy is stalled.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    stalled: Arc<AtomicBool>,
    resumed: Arc<Notify>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        loop {
            let waiting = resumed.notified();
            if !stalled.load(Ordering::SeqCst) {
                break;
            }
            waiting.await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}
