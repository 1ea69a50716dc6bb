//! The actix app (one process, memory backend): 1,000 concurrent HTTP buyers for 100 units
//! sell exactly 100 with each strategy; retried orders and reservation expiry over HTTP.

use std::path::Path;

use example_support::shop::Strategy;
use lock_harness::checks::{reservations_expire, sells_exactly, LIMIT};
use lock_harness::inventory::Instance;
use tokio::time::timeout;

async fn start(strategy: Strategy, sku: &str, stock: u64) -> Instance {
    let args: Vec<String> = [
        "--strategy",
        strategy.name(),
        "--backend",
        "memory",
        "--sku",
        sku,
        "--stock",
        &stock.to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    Instance::launch(Path::new(env!("CARGO_BIN_EXE_flash-sale-actix")), &args)
        .await
        .unwrap()
}

async fn sells_exactly_100(strategy: Strategy) {
    let app = start(strategy, "sku-x", 100).await;
    timeout(
        LIMIT,
        sells_exactly(vec![app.base.clone()], "sku-x", 100, 1_000),
    )
    .await
    .unwrap()
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_strategy_sells_exactly_the_stock() {
    sells_exactly_100(Strategy::Lock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_atomic_strategy_sells_exactly_the_stock() {
    sells_exactly_100(Strategy::Atomic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reserve_strategy_sells_exactly_the_stock() {
    sells_exactly_100(Strategy::Reserve).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_expire_back_into_stock_and_late_confirms_are_refused() {
    let app = start(Strategy::Reserve, "sku-r", 2).await;
    timeout(LIMIT, reservations_expire(&app.base, "sku-r"))
        .await
        .unwrap()
        .unwrap();
}
