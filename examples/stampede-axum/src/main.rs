//! `stampede-axum --port P --backend memory|redis [--redis-url URL] [--namespace NS]
//! [--fresh-ms F] [--swr-ms W] [--sie-ms E] [--origin-ms D]`: serves the product pages;
//! prints `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a
//! free port).
//! With `--admin-token TOKEN` (or `ADMIN_TOKEN`; at least 16 bytes), the operator's admin
//! console is served at `/admin/` behind that token.

use example_support::app;
use example_support::flags::usage_error;

#[tokio::main]
async fn main() {
    let (service, port) = app::product_service().await;
    let listener = app::listen(port).await;
    axum::serve(listener, stampede_axum::router(service))
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
