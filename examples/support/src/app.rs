//! What the example apps' `main`s share, whichever web framework serves them: the service the
//! process's flags configure, and the listening socket announced on stdout.
//!
//! ```no_run
//! use example_support::app;
//!
//! # #[tokio::main] async fn main() {
//! let (service, port) = app::product_service().await;
//! let listener = app::listen(port).await;
//! // axum::serve(listener, router(service)), or actix-web's `HttpServer::listen`.
//! # drop((service, listener));
//! # }
//! ```

use crate::flags::usage_error;
use crate::payments::{PaymentService, PaymentsConfig};
use crate::product::{ProductConfig, ProductService};
use crate::shop::{Shop, ShopConfig};

/// The product service the process's flags configure ([`ProductConfig::from_args`]) and the
/// port to serve it on; a bad flag or a failed start exits with a usage error.
pub async fn product_service() -> (ProductService, u16) {
    let config =
        ProductConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let service = ProductService::start(&config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the product service: {e}")));
    (service, config.port)
}

/// The flash-sale shop the process's flags configure ([`ShopConfig::from_args`]) and the port
/// to serve it on; a bad flag or a failed start exits with a usage error.
pub async fn shop() -> (Shop, u16) {
    let config =
        ShopConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let port = config.port;
    let shop = Shop::start(config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the shop: {e}")));
    (shop, port)
}

/// Listens on `127.0.0.1:port` (`0` picks a free port) and prints `listening on
/// http://127.0.0.1:P`, the line `cargo xtask demo` waits for: from then on connections are
/// queued for the server. A port that cannot be had exits with a usage error.
pub async fn listen(port: u16) -> tokio::net::TcpListener {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot listen on port {port}: {e}")));
    let address = listener
        .local_addr()
        .expect("a bound listener has an address");
    println!("listening on http://{address}");
    listener
}

/// The payments service the process's flags configure ([`PaymentsConfig::from_args`]) and
/// the port to serve it on; a bad flag or a failed start exits with a usage error.
pub async fn payment_service() -> (PaymentService, u16) {
    let config =
        PaymentsConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    payment_service_of(&config).await
}

/// The payments service of `config` and the port to serve it on; a failed start exits with
/// a usage error.
pub async fn payment_service_of(config: &PaymentsConfig) -> (PaymentService, u16) {
    let service = PaymentService::start(config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the payments service: {e}")));
    (service, config.port)
}
