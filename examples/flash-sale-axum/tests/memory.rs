//! The axum app in-process on the memory backend: 1,000 concurrent HTTP buyers for 100 units
//! sell exactly 100 with each strategy; retried orders and reservation expiry over HTTP.

use example_support::shop::{Shop, ShopConfig, Strategy};
use lock_harness::checks::{reservations_expire, sells_exactly, LIMIT};
use tokio::time::timeout;

async fn serve(strategy: Strategy) -> (String, Shop) {
    let shop = Shop::start(ShopConfig::memory(strategy)).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = flash_sale_axum::router(shop.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, shop)
}

async fn sells_exactly_100(strategy: Strategy) {
    let (base, shop) = serve(strategy).await;
    shop.restock("sku-x", 100).await.unwrap();
    timeout(LIMIT, sells_exactly(vec![base], "sku-x", 100, 1_000))
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
    let (base, shop) = serve(Strategy::Reserve).await;
    shop.restock("sku-r", 2).await.unwrap();
    timeout(LIMIT, reservations_expire(&base, "sku-r"))
        .await
        .unwrap()
        .unwrap();
}
