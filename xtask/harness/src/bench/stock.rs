//! The SQL stock strategies' figures (`cargo xtask bench --backend postgres|mysql`, or `--only
//! stock`): deductions per second on **one SKU** with 1, 8 and 64 concurrent buyers, for each
//! strategy of `SqlStock` (`for-update`, `optimistic`, `conditional`), side by side with the
//! Redis stock's atomic script in the same run, each with its p99 and what it had to retry.
//!
//! Every deduction is a new order id, and the SKU never runs out (stock = deductions): each
//! call takes a unit, the path a flash sale's buyers pay until the stock is gone. The ratio is
//! each strategy's deductions/s over the Redis atomic script's at the same concurrency.

use std::sync::Arc;
use std::time::Duration;

use lock_core::redis::RedisStock;
use lock_core::sql::{Dialect, SqlStock, StockStrategy};
use lock_core::stock::Stock;
use lock_core::RedisBackend;
use serde_json::{json, Value};
use tokio::time::Instant;

/// Concurrent buyers of the rows.
const CONCURRENCY: [usize; 3] = [1, 8, 64];
/// Deductions per row (fewer with one buyer, which is slow on a row lock's database).
fn deductions(buyers: usize) -> usize {
    if buyers == 1 {
        500
    } else {
        3000
    }
}

/// One row of the table.
struct Row {
    store: &'static str,
    strategy: &'static str,
    buyers: usize,
    per_second: f64,
    p99: Duration,
    retries: u64,
    conflicts: u64,
}

/// Measures, prints and returns the figures for the report. `db` is `postgres` or `mysql`.
pub async fn run(db: &'static str, url: &str, redis_url: &str) -> Value {
    let backend = RedisBackend::connect(redis_url)
        .await
        .unwrap_or_else(|e| panic!("the stock bench compares with Redis at {redis_url}: {e}"));
    let redis = Stock::new(RedisStock::from_backend(&backend));
    let mut rows = Vec::new();
    for buyers in CONCURRENCY {
        for strategy in StockStrategy::ALL {
            rows.push(match db {
                "postgres" => sql::<sqlx::Postgres>(db, url, strategy, buyers).await,
                _ => sql::<sqlx::MySql>(db, url, strategy, buyers).await,
            });
        }
        let (per_second, p99) = deduct(&redis, buyers).await;
        rows.push(Row {
            store: "redis",
            strategy: "atomic",
            buyers,
            per_second,
            p99,
            retries: 0,
            conflicts: 0,
        });
    }
    print(&rows);
    json!({
        "stock": rows.iter().map(|r| json!({
            "store": r.store, "strategy": r.strategy, "buyers": r.buyers,
            "deductions_per_second": r.per_second, "p99_us": r.p99.as_micros() as u64,
            "retries": r.retries, "conflicts": r.conflicts,
            "vs_redis_atomic": ratio(&rows, r),
        })).collect::<Vec<_>>(),
    })
}

/// The row of `strategy` with `buyers` on the database `db` at `url`.
async fn sql<D: Dialect>(
    db: &'static str,
    url: &str,
    strategy: StockStrategy,
    buyers: usize,
) -> Row {
    let store = SqlStock::<D>::builder(url)
        .strategy(strategy)
        .max_connections(u32::try_from(buyers).unwrap_or(64) + 2)
        .attempts(10_000)
        .connect()
        .await
        .expect("SQL stock");
    let stock = Stock::new(store.clone());
    let (per_second, p99) = deduct(&stock, buyers).await;
    let stats = store.stats();
    Row {
        store: db,
        strategy: strategy.name(),
        buyers,
        per_second,
        p99,
        retries: stats.retries,
        conflicts: stats.conflicts,
    }
}

/// `deductions(buyers)` deductions of one SKU by `buyers` tasks: deductions/s and p99.
async fn deduct(stock: &Stock, buyers: usize) -> (f64, Duration) {
    let total = deductions(buyers);
    let sku = format!("bench-stock-{}-{}", std::process::id(), unique());
    stock
        .restock(&sku, total as u64, "bench-stock")
        .await
        .expect("restock");
    let started = Instant::now();
    let tasks: Vec<_> = (0..buyers)
        .map(|task| {
            let (stock, sku) = (stock.clone(), Arc::new(sku.clone()));
            tokio::spawn(async move {
                let mut took = Vec::new();
                for n in (task..total).step_by(buyers) {
                    let sent = Instant::now();
                    let deduction = stock.deduct(&sku, 1, &format!("order-{n}")).await;
                    assert!(deduction.is_ok(), "deduction failed: {deduction:?}");
                    took.push(sent.elapsed());
                }
                took
            })
        })
        .collect();
    let mut took = Vec::new();
    for task in tasks {
        took.extend(task.await.expect("buyer"));
    }
    let elapsed = started.elapsed();
    let level = stock.audit(&sku).await.expect("audit");
    assert_eq!(
        (level.sold, level.available),
        (total as u64, 0),
        "every deduction took a unit"
    );
    took.sort_unstable();
    let p99 = took[(took.len() * 99).div_ceil(100).saturating_sub(1)];
    (total as f64 / elapsed.as_secs_f64().max(1e-9), p99)
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `row`'s deductions/s over the Redis atomic script's at the same concurrency.
fn ratio(rows: &[Row], row: &Row) -> f64 {
    rows.iter()
        .find(|r| r.store == "redis" && r.buyers == row.buyers)
        .map_or(0.0, |redis| row.per_second / redis.per_second.max(1e-9))
}

fn print(rows: &[Row]) {
    println!("\nstock: deductions of one SKU (each a new order id), release build");
    println!(
        "{:<9} {:<12} {:>6} {:>13} {:>8} {:>8} {:>9} {:>9}",
        "store", "strategy", "buyers", "deductions/s", "p99 ms", "retries", "conflicts", "vs redis"
    );
    for row in rows {
        println!(
            "{:<9} {:<12} {:>6} {:>13.0} {:>8.2} {:>8} {:>9} {:>8.2}×",
            row.store,
            row.strategy,
            row.buyers,
            row.per_second,
            row.p99.as_secs_f64() * 1e3,
            row.retries,
            row.conflicts,
            ratio(rows, row)
        );
    }
}
