//! `flash-sale-actix --port P --strategy lock|atomic|reserve --backend memory|redis
//! [--redis-url URL] [--stock N --sku S] [--namespace NS]`: serves the flash sale; prints
//! `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a free port).

use actix_web::{App, HttpServer};
use lock_harness::shop::{Shop, ShopConfig};
use lock_harness::usage_error;

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let config =
        ShopConfig::from_args(std::env::args().skip(1)).unwrap_or_else(|e| usage_error(&e));
    let port = config.port;
    let shop = Shop::start(config)
        .await
        .unwrap_or_else(|e| usage_error(&format!("cannot start the shop: {e}")));
    let server =
        HttpServer::new(move || App::new().configure(flash_sale_actix::routes(shop.clone())))
            .workers(2)
            .bind(("127.0.0.1", port))?;
    let address = server.addrs()[0];
    let running = server.run();
    println!("listening on http://{address}");
    running.await
}
