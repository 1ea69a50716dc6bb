//! The axum app's tests: the flash-sale checks of `lock_harness` (exactly the stock sold with
//! each strategy in-process and over two processes on Redis, also while that Redis restarts;
//! reservations expiring; the bad-input table; `GET /metrics`), shared with the actix-web app.

use example_support::shop::Shop;

async fn serve(shop: Shop) -> String {
    flash_sale_axum::spawn(shop).await.unwrap()
}

lock_harness::flash_sale_app_tests!(serve, env!("CARGO_BIN_EXE_flash-sale-axum"));
