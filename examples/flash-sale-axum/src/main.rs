//! `flash-sale-axum --port P --strategy lock|atomic|reserve --backend memory|redis
//! [--redis-url URL] [--stock N --sku S] [--namespace NS] [--report-every-ms MS --instance NAME]`:
//! serves the flash sale; prints `listening on http://127.0.0.1:P` once it accepts connections
//! (`--port 0` picks a free port). With `--report-every-ms`, a scheduled stock report runs on
//! one instance per slot (`example_support::shop::report`).
//! With `--admin-token TOKEN` (or `ADMIN_TOKEN`; at least 16 bytes), the operator's admin
//! console is served at `/admin/` behind that token.

use example_support::app;
use example_support::flags::usage_error;

#[tokio::main]
async fn main() {
    let (shop, port) = app::shop().await;
    let listener = app::listen(port).await;
    example_support::shop::report::spawn(&shop);
    axum::serve(listener, flash_sale_axum::router(shop))
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
