//! The actix-web app's tests: the flash-sale checks of `lock_harness` (exactly the stock sold
//! with each strategy in-process and over two processes on Redis, also while that Redis
//! restarts; reservations expiring; the bad-input table; `GET /metrics`), shared with the axum
//! app.

use example_support::shop::Shop;

async fn serve(shop: Shop) -> String {
    flash_sale_actix::spawn(shop, 1).unwrap()
}

lock_harness::flash_sale_app_tests!(serve, env!("CARGO_BIN_EXE_flash-sale-actix"));
