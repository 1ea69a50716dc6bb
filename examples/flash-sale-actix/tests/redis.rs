//! Two processes of the actix app on one Redis: 1,000 concurrent HTTP buyers for 100 units sell
//! exactly 100 with each strategy. Needs `LOCK_TEST_REDIS_URL` (`cargo xtask test` sets it).

use std::path::PathBuf;

use example_support::shop::Strategy;
use lock_core::testing::server_url;
use lock_harness::checks::redis_sells_exactly;

async fn two_processes(strategy: Strategy) {
    let Some(url) = server_url("LOCK_TEST_REDIS_URL").unwrap() else {
        return;
    };
    let app = PathBuf::from(env!("CARGO_BIN_EXE_flash-sale-actix"));
    redis_sells_exactly(strategy, url, vec![app]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_strategy_sells_exactly_the_stock_across_processes() {
    two_processes(Strategy::Lock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_atomic_strategy_sells_exactly_the_stock_across_processes() {
    two_processes(Strategy::Atomic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reserve_strategy_sells_exactly_the_stock_across_processes() {
    two_processes(Strategy::Reserve).await;
}
