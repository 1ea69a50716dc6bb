//! `cargo xtask bench --allocations [--backend memory|redis]`: what one uncontended
//! acquire+release allocates, beside its floor's allocations (two raw `EVALSHA` on Redis, a
//! `tokio::sync::Mutex` lock on memory), and where: the sites that allocate most per cycle,
//! from a DHAT heap profile of the measured cycles (`target/bench/dhat-<backend>.json`, which
//! DHAT's viewer opens with every backtrace).
//!
//! A binary of its own: DHAT's allocator takes a lock on every allocation, which the timing
//! figures of `bench` must not pay.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use example_support::backend::{redis_url, BackendKind};
use example_support::flags::{usage_error, Flags};
use lock_core::MemoryBackend;
use lock_harness::bench::floor::{Floor, MemoryFloor, RedisFloor};
use lock_harness::{connect, Connected};
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// How many allocation sites are printed.
const TOP_SITES: usize = 40;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let flags = Flags::parse(
        std::env::args().skip(1),
        &["backend", "cycles", "redis-url"],
    )
    .unwrap_or_else(|e| usage_error(&e));
    let kind = flags.backend().unwrap_or_else(|e| usage_error(&e));
    let cycles = flags
        .number("cycles", 2000)
        .unwrap_or_else(|e| usage_error(&e))
        .max(10) as usize;
    let url = redis_url(&flags);
    let memory = MemoryBackend::new();
    let namespace = format!("alloc-{}", std::process::id());
    let connected = connect(kind, &url, &namespace, &memory)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot connect: {e}")));
    match kind {
        BackendKind::Memory => profile(kind, &connected, MemoryFloor::default(), cycles).await,
        BackendKind::Redis => {
            profile(kind, &connected, RedisFloor::connect(&url).await, cycles).await
        }
        _ => usage_error("--allocations runs on memory or redis"),
    }
}

/// Runs `cycles` uncontended acquire+release pairs and as many floor pairs under DHAT, prints
/// the allocations of each per cycle and the top sites of the lock's.
async fn profile<F: Floor>(kind: BackendKind, connected: &Connected, floor: F, cycles: usize) {
    // Warm up: connections, scripts, the watchdog's driver, the metrics and the maps.
    for i in 0..200 {
        cycle(connected, i).await;
        floor.op(0).await;
    }
    let file = report_dir().join(format!("dhat-{}.json", kind.name()));
    let profiler = dhat::Profiler::builder().file_name(&file).build();
    let start = dhat::HeapStats::get();
    for i in 0..cycles {
        cycle(connected, i).await;
    }
    let lock = dhat::HeapStats::get();
    for _ in 0..cycles {
        for _ in 0..floor.ops_per_pair() {
            floor.op(0).await;
        }
    }
    let end = dhat::HeapStats::get();
    drop(profiler);

    let per = |blocks: u64| blocks as f64 / cycles as f64;
    let (lock_blocks, lock_bytes) = (
        lock.total_blocks - start.total_blocks,
        lock.total_bytes - start.total_bytes,
    );
    let (floor_blocks, floor_bytes) = (
        end.total_blocks - lock.total_blocks,
        end.total_bytes - lock.total_bytes,
    );
    println!(
        "allocations per uncontended acquire+release ({} backend, {cycles} cycles)",
        kind.name()
    );
    println!(
        "  lock:  {:>7.1} allocations  {:>8.0} bytes",
        per(lock_blocks),
        per(lock_bytes)
    );
    println!(
        "  floor: {:>7.1} allocations  {:>8.0} bytes  ({})",
        per(floor_blocks),
        per(floor_bytes),
        floor.pair_name()
    );
    println!("  profile: {}", file.display());
    print_top_sites(&file, cycles);
}

/// One uncontended acquire+release of the bench's keys.
async fn cycle(connected: &Connected, i: usize) {
    let guard = connected
        .locks
        .lock(format!("solo:{}", i % 64))
        .await
        .expect("acquire");
    guard.release().await.expect("release");
}

/// The sites that allocated most in the profile (the lock's cycles and the floor's, told
/// apart by their frames), each as its first frame outside the standard library's allocation
/// code, with its allocations per cycle.
fn print_top_sites(file: &Path, cycles: usize) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    let Ok(profile) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let frames: Vec<&str> = profile["ftbl"]
        .as_array()
        .map(|table| table.iter().map(|f| f.as_str().unwrap_or("?")).collect())
        .unwrap_or_default();
    let mut by_site: HashMap<String, u64> = HashMap::new();
    for point in profile["pps"].as_array().into_iter().flatten() {
        // "tbk": total blocks ("tb" is bytes).
        let blocks = point["tbk"].as_u64().unwrap_or(0);
        let stack: Vec<&str> = point["fs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|index| frames.get(usize::try_from(index.as_u64()?).ok()?).copied())
            .collect();
        // The first two frames past the allocation plumbing (the allocator, Box, Vec, String,
        // Arc, fmt): the code that asked for the memory and its caller.
        let asked: Vec<String> = stack
            .iter()
            .filter(|frame| !is_plumbing(frame))
            .take(2)
            .map(|frame| short(frame))
            .collect();
        let site = if asked.is_empty() {
            stack
                .first()
                .map_or_else(|| "?".to_owned(), |frame| short(frame))
        } else {
            asked.join("  <-  ")
        };
        *by_site.entry(site).or_default() += blocks;
    }
    let mut sites: Vec<(String, u64)> = by_site.into_iter().collect();
    sites.sort_by_key(|site| std::cmp::Reverse(site.1));
    println!("  top allocation sites (allocations per cycle, lock and floor together):");
    for (site, blocks) in sites.into_iter().take(TOP_SITES) {
        println!("    {:>6.2}  {site}", blocks as f64 / cycles as f64);
    }
}

/// Whether `frame` is allocation plumbing rather than the code that allocates: the allocator
/// (dhat's included) and the standard library's containers and formatting.
fn is_plumbing(frame: &str) -> bool {
    const LIBRARY_PATHS: [&str; 12] = [
        "(alloc/",
        "(core/",
        "(std/",
        "dhat-",
        "(src/raw_vec",
        "(src/vec/",
        "(src/string.rs",
        "(src/fmt.rs",
        "(src/boxed.rs",
        "(src/sync.rs",
        "(src/str.rs",
        "(src/slice.rs",
    ];
    LIBRARY_PATHS.iter().any(|path| frame.contains(path))
}

/// A frame without its address, cut to 110 characters: `{async_fn#0} (src/lock/request.rs:214:24)`.
fn short(frame: &str) -> String {
    let frame = frame.split_once(": ").map_or(frame, |(_, rest)| rest);
    frame.chars().take(110).collect()
}

/// `target/bench/`.
fn report_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| usage_error(&format!("{}: {e}", dir.display())));
    dir
}
