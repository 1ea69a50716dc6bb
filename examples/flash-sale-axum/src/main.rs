//! `flash-sale-axum --port P --strategy lock|atomic|reserve --backend memory|redis
//! [--redis-url URL] [--stock N --sku S] [--namespace NS]`: serves the flash sale; prints
//! `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a free port).

use example_support::app;
use example_support::flags::usage_error;

#[tokio::main]
async fn main() {
    let (shop, port) = app::shop().await;
    let listener = app::listen(port).await;
    axum::serve(listener, flash_sale_axum::router(shop))
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
