//! `flash-sale-axum --port P --strategy lock|atomic|reserve --backend memory|redis
//! [--redis-url URL] [--stock N --sku S] [--namespace NS]`: serves the flash sale; prints
//! `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a free port).

use lock_harness::shop::{Shop, ShopConfig};
use lock_harness::usage_error;

#[tokio::main]
async fn main() {
    let config =
        ShopConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let port = config.port;
    let shop = Shop::start(config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the shop: {e}")));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot listen on port {port}: {e}")));
    let address = listener
        .local_addr()
        .expect("a bound listener has an address");
    println!("listening on http://{address}");
    axum::serve(listener, flash_sale_axum::router(shop))
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
