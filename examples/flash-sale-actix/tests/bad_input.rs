//! The bad-input table ([`lock_harness::bad_input`]) against the actix app with each strategy,
//! served in-process on the memory backend: bad input answers a 400 problem naming it, never
//! a 5xx, and good input still sells.

use actix_web::{App, HttpServer};
use example_support::shop::{Shop, ShopConfig, Strategy};
use lock_harness::bad_input::{check_all, seed};

async fn bad_input_is_refused(strategy: Strategy) {
    let shop = Shop::start(ShopConfig::memory(strategy)).await.unwrap();
    seed(&shop).await.unwrap();
    let server =
        HttpServer::new(move || App::new().configure(flash_sale_actix::routes(shop.clone())))
            .workers(1)
            .bind(("127.0.0.1", 0))
            .unwrap();
    let base = format!("http://{}", server.addrs()[0]);
    actix_web::rt::spawn(server.run());
    let rows = check_all(&base)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", strategy.name()));
    assert!(rows > 80, "the table shrank to {rows} rows");
}

#[actix_web::test]
async fn the_lock_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Lock).await;
}

#[actix_web::test]
async fn the_atomic_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Atomic).await;
}

#[actix_web::test]
async fn the_reserve_strategy_refuses_bad_input_with_400_problems() {
    bad_input_is_refused(Strategy::Reserve).await;
}
