//! `flash-sale-actix --port P --strategy lock|atomic|reserve --backend memory|redis
//! [--redis-url URL] [--stock N --sku S] [--namespace NS] [--report-every-ms MS --instance NAME]`:
//! serves the flash sale; prints `listening on http://127.0.0.1:P` once it accepts connections
//! (`--port 0` picks a free port). With `--report-every-ms`, a scheduled stock report runs on
//! one instance per slot (`example_support::shop::report`).
//! With `--admin-token TOKEN` (or `ADMIN_TOKEN`; at least 16 bytes), the operator's admin
//! console is served at `/admin/` behind that token.

use actix_web::{App, HttpServer};
use example_support::app;

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let (shop, port) = app::shop().await;
    let listener = app::listen(port).await.into_std()?;
    example_support::shop::report::spawn(&shop);
    HttpServer::new(move || App::new().configure(flash_sale_actix::routes(shop.clone())))
        .workers(2)
        .listen(listener)?
        .run()
        .await
}
