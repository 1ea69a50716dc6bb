//! `stampede-actix --port P --backend memory|redis [--redis-url URL] [--namespace NS]
//! [--fresh-ms F] [--swr-ms W] [--sie-ms E] [--origin-ms D]`: serves the product pages;
//! prints `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a
//! free port).

use actix_web::{App, HttpServer};
use lock_harness::product::{ProductConfig, ProductService};
use lock_harness::usage_error;

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let config =
        ProductConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let port = config.port;
    let service = ProductService::start(&config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the product service: {e}")));
    let server =
        HttpServer::new(move || App::new().configure(stampede_actix::routes(service.clone())))
            .workers(2)
            .bind(("127.0.0.1", port))?;
    let address = server.addrs()[0];
    let running = server.run();
    println!("listening on http://{address}");
    running.await
}
