//! `stampede-actix --port P --backend memory|redis [--redis-url URL] [--namespace NS]
//! [--fresh-ms F] [--swr-ms W] [--sie-ms E] [--origin-ms D]`: serves the product pages;
//! prints `listening on http://127.0.0.1:P` once it accepts connections (`--port 0` picks a
//! free port).
//! With `--admin-token TOKEN` (or `ADMIN_TOKEN`; at least 16 bytes), the operator's admin
//! console is served at `/admin/` behind that token.

use actix_web::{App, HttpServer};
use example_support::app;

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let (service, port) = app::product_service().await;
    let listener = app::listen(port).await.into_std()?;
    HttpServer::new(move || App::new().configure(stampede_actix::routes(service.clone())))
        .workers(2)
        .listen(listener)?
        .run()
        .await
}
