//! Redis killed and restarted under two processes of the actix app: no oversell, failures
//! answer 503, never a 200 for a sale that was not recorded, and the rest sells afterwards.
//!
//! Runs its own `redis-server` (it must kill it); gated on `LOCK_TEST_REDIS_URL` like the
//! other Redis suites, since `cargo xtask test` is what installs the server.

use std::path::PathBuf;

use example_support::shop::Strategy;
use lock_core::testing::server_url;
use lock_harness::checks::redis_dropped_mid_run;

async fn dropped(strategy: Strategy) {
    if server_url("LOCK_TEST_REDIS_URL").unwrap().is_none() {
        return;
    }
    let app = PathBuf::from(env!("CARGO_BIN_EXE_flash-sale-actix"));
    let data = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("redis-drop-actix-{}", strategy.name()));
    std::fs::remove_dir_all(&data).ok();
    redis_dropped_mid_run(strategy, vec![app], data)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_strategy_survives_a_redis_restart() {
    dropped(Strategy::Lock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_atomic_strategy_survives_a_redis_restart() {
    dropped(Strategy::Atomic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reserve_strategy_survives_a_redis_restart() {
    dropped(Strategy::Reserve).await;
}
