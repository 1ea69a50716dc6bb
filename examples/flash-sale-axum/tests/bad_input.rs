//! The bad-input table ([`lock_harness::bad_input`]) against the axum app with each strategy,
//! in-process on the memory backend: bad input answers a 400 problem naming it, never a 5xx,
//! and good input still sells.

use example_support::shop::{Shop, ShopConfig, Strategy};
use lock_harness::bad_input::{check_all, seed};

async fn bad_input_is_refused(strategy: Strategy) {
    let shop = Shop::start(ShopConfig::memory(strategy)).await.unwrap();
    seed(&shop).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, flash_sale_axum::router(shop)).await });
    let rows = check_all(&base)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", strategy.name()));
    assert!(rows > 80, "the table shrank to {rows} rows");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Lock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_atomic_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Atomic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reserve_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Reserve).await;
}
