//! `stampede-axum --port P --backend memory|redis [--redis-url URL] [--namespace NS]
//! [--fresh-ms F] [--swr-ms W] [--sie-ms E] [--origin-ms D]`: serves the product pages;
//! prints `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a
//! free port).

use lock_harness::product::{ProductConfig, ProductService};
use lock_harness::usage_error;

#[tokio::main]
async fn main() {
    let config =
        ProductConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let port = config.port;
    let service = ProductService::start(&config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the product service: {e}")));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot listen on port {port}: {e}")));
    let address = listener
        .local_addr()
        .expect("a bound listener has an address");
    println!("listening on http://{address}");
    axum::serve(listener, stampede_axum::router(service))
        .await
        .unwrap_or_else(|e| usage_error(&format!("server failed: {e}")));
}
