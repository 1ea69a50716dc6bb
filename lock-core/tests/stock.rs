//! The stock primitive on memory and on a real Redis: exactly N sold for a stock of N under
//! concurrency, idempotent order ids, reservations that expire back into stock.

use std::time::Duration;

use lock_core::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, MemoryStock, ReserveOutcome, Stock,
};
use tokio::time::timeout;

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

async fn exactly_n_sold(stock: Stock) {
    let sku = unique("flash");
    stock.restock(&sku, 50).await.unwrap();
    let buyers: Vec<_> = (0..400)
        .map(|i| {
            let (stock, sku) = (stock.clone(), sku.clone());
            tokio::spawn(async move { stock.deduct(&sku, 1, &format!("order-{i}")).await.unwrap() })
        })
        .collect();
    let mut sold = 0;
    for buyer in buyers {
        if matches!(buyer.await.unwrap().outcome, DeductOutcome::Deducted { .. }) {
            sold += 1;
        }
    }
    assert_eq!(sold, 50);
    let level = stock.audit(&sku).await.unwrap();
    assert_eq!((level.available, level.sold, level.received), (0, 50, 50));
    assert!(level.is_balanced());
}

async fn retried_orders_deduct_once(stock: Stock) {
    let sku = unique("retry");
    stock.restock(&sku, 3).await.unwrap();
    let first = stock.deduct(&sku, 2, "o-1").await.unwrap();
    assert_eq!(first.outcome, DeductOutcome::Deducted { remaining: 1 });
    assert!(!first.duplicate);
    let again = stock.deduct(&sku, 2, "o-1").await.unwrap();
    assert_eq!((again.outcome, again.duplicate), (first.outcome, true));
    let refused = stock.deduct(&sku, 2, "o-2").await.unwrap();
    assert_eq!(refused.outcome, DeductOutcome::OutOfStock { available: 1 });
    // A refused order stays refused, even after a restock: its first outcome is the answer.
    stock.restock(&sku, 5).await.unwrap();
    let refused_again = stock.deduct(&sku, 2, "o-2").await.unwrap();
    assert_eq!(
        (refused_again.outcome, refused_again.duplicate),
        (refused.outcome, true)
    );
    assert_eq!(stock.level(&sku).await.unwrap().sold, 2);
}

async fn reservations(stock: Stock) {
    let sku = unique("reserve");
    stock.restock(&sku, 2).await.unwrap();
    let short = Duration::from_millis(150);
    let held = stock.reserve(&sku, 1, "r-expires", short).await.unwrap();
    assert_eq!(held.outcome, ReserveOutcome::Reserved { remaining: 1 });
    let kept = stock
        .reserve(&sku, 1, "r-kept", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(kept.outcome, ReserveOutcome::Reserved { remaining: 0 });
    assert!(matches!(
        stock
            .reserve(&sku, 1, "r-none", Duration::from_secs(60))
            .await
            .unwrap()
            .outcome,
        ReserveOutcome::OutOfStock { available: 0 }
    ));
    assert_eq!(stock.level(&sku).await.unwrap().reserved, 2);

    // The short reservation runs out and its unit returns (the store's clock decides).
    timeout(Duration::from_secs(5), async {
        while stock.level(&sku).await.unwrap().available == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("expired reservation never returned to stock");
    assert_eq!(
        stock.confirm(&sku, "r-expires").await.unwrap(),
        ConfirmOutcome::Expired
    );
    assert_eq!(
        stock.cancel(&sku, "r-expires").await.unwrap(),
        CancelOutcome::AlreadyReleased
    );

    assert_eq!(
        stock.confirm(&sku, "r-kept").await.unwrap(),
        ConfirmOutcome::Confirmed
    );
    assert_eq!(
        stock.confirm(&sku, "r-kept").await.unwrap(),
        ConfirmOutcome::AlreadyConfirmed
    );
    assert_eq!(
        stock.cancel(&sku, "r-kept").await.unwrap(),
        CancelOutcome::AlreadyConfirmed
    );

    let again = stock
        .reserve(&sku, 1, "r-cancel", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(again.outcome, ReserveOutcome::Reserved { .. }));
    assert_eq!(
        stock.cancel(&sku, "r-cancel").await.unwrap(),
        CancelOutcome::Cancelled
    );
    assert_eq!(
        stock.cancel(&sku, "r-cancel").await.unwrap(),
        CancelOutcome::AlreadyReleased
    );
    assert_eq!(
        stock.confirm(&sku, "r-cancel").await.unwrap(),
        ConfirmOutcome::Cancelled
    );
    assert_eq!(
        stock.confirm(&sku, "nobody").await.unwrap(),
        ConfirmOutcome::Unknown
    );

    let level = stock.audit(&sku).await.unwrap();
    assert_eq!(
        (level.available, level.reserved, level.sold, level.received),
        (1, 0, 1, 2)
    );
    assert!(level.is_balanced());
}

async fn bad_input(stock: Stock) {
    assert!(stock
        .deduct("", 1, "o")
        .await
        .unwrap_err()
        .is_invalid_input());
    assert!(stock
        .deduct("s", 0, "o")
        .await
        .unwrap_err()
        .is_invalid_input());
    assert!(stock
        .deduct("s", 1, "")
        .await
        .unwrap_err()
        .is_invalid_input());
    assert!(stock
        .reserve("s", 1, "o", Duration::ZERO)
        .await
        .unwrap_err()
        .is_invalid_input());
}

macro_rules! stock_suite {
    ($module:ident, $make:expr) => {
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn exactly_n_sold_under_concurrency() {
                if let Some(stock) = $make.await {
                    timeout(Duration::from_secs(30), super::exactly_n_sold(stock))
                        .await
                        .unwrap()
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retried_orders_deduct_once() {
                if let Some(stock) = $make.await {
                    timeout(
                        Duration::from_secs(30),
                        super::retried_orders_deduct_once(stock),
                    )
                    .await
                    .unwrap()
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn reservations_confirm_cancel_expire() {
                if let Some(stock) = $make.await {
                    timeout(Duration::from_secs(30), super::reservations(stock))
                        .await
                        .unwrap()
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn bad_input_is_typed() {
                if let Some(stock) = $make.await {
                    timeout(Duration::from_secs(30), super::bad_input(stock))
                        .await
                        .unwrap()
                }
            }
        }
    };
}

async fn memory() -> Option<Stock> {
    Some(
        Stock::new(MemoryStock::new())
            .with_namespace("test")
            .unwrap(),
    )
}

stock_suite!(memory_stock, memory());

#[cfg(feature = "redis")]
async fn redis() -> Option<Stock> {
    let url = lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")?;
    let backend = lock_core::RedisBackend::connect(&url).await.unwrap();
    Some(
        Stock::new(lock_core::stock::RedisStock::new(&backend))
            .with_namespace("test")
            .unwrap(),
    )
}

#[cfg(feature = "redis")]
stock_suite!(redis_stock, redis());
