//! The stock primitive on memory and on a real Redis: exactly N sold for a stock of N under
//! concurrency, idempotent order ids, reservations that expire back into stock.

use std::time::Duration;

use lock_core::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, MemoryStock, ReserveOutcome, Stock,
};
use lock_core::testing::unique;
use lock_core::LockError;
use tokio::time::timeout;

/// Every check ends within this, pass or fail.
const BOUND: Duration = Duration::from_secs(30);

async fn exactly_n_sold_under_concurrency(stock: Stock) {
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

/// The same order id with another quantity is not a retry: refused, typed, nothing changes.
async fn reused_order_ids_are_refused(stock: Stock) {
    let sku = unique("reused");
    stock.restock(&sku, 5).await.unwrap();
    let is_reused = |error: LockError| {
        matches!(
            &error,
            LockError::InvalidInput { what: "order id", reason } if reason.contains("quantity 2, not 3")
        ) || panic!("{error:?}")
    };
    let ttl = Duration::from_secs(60);
    stock.deduct(&sku, 2, "o-1").await.unwrap();
    assert!(is_reused(stock.deduct(&sku, 3, "o-1").await.unwrap_err()));
    assert!(stock.deduct(&sku, 2, "o-1").await.unwrap().duplicate);
    // A refused order keeps its quantity too.
    stock.deduct(&sku, 3, "o-fill").await.unwrap();
    assert!(matches!(
        stock.deduct(&sku, 2, "o-none").await.unwrap().outcome,
        DeductOutcome::OutOfStock { available: 0 }
    ));
    assert!(is_reused(
        stock.deduct(&sku, 3, "o-none").await.unwrap_err()
    ));

    stock.restock(&sku, 4).await.unwrap();
    stock.reserve(&sku, 2, "r-1", ttl).await.unwrap();
    assert!(is_reused(
        stock.reserve(&sku, 3, "r-1", ttl).await.unwrap_err()
    ));
    assert!(stock.reserve(&sku, 2, "r-1", ttl).await.unwrap().duplicate);
    stock.reserve(&sku, 2, "r-fill", ttl).await.unwrap();
    assert!(matches!(
        stock.reserve(&sku, 2, "r-none", ttl).await.unwrap().outcome,
        ReserveOutcome::OutOfStock { available: 0 }
    ));
    assert!(is_reused(
        stock.reserve(&sku, 3, "r-none", ttl).await.unwrap_err()
    ));
    assert!(
        stock
            .reserve(&sku, 2, "r-none", ttl)
            .await
            .unwrap()
            .duplicate
    );

    let level = stock.audit(&sku).await.unwrap();
    assert_eq!(
        (level.available, level.reserved, level.sold, level.received),
        (0, 4, 5, 9)
    );
}

/// Confirms `order`, which must answer `outcome`.
async fn confirm(stock: &Stock, sku: &str, order: &str, outcome: ConfirmOutcome) {
    let answer = stock.confirm(sku, order).await.unwrap();
    assert_eq!(answer, outcome, "confirm {order}");
}

/// Cancels `order`, which must answer `outcome`.
async fn cancel(stock: &Stock, sku: &str, order: &str, outcome: CancelOutcome) {
    let answer = stock.cancel(sku, order).await.unwrap();
    assert_eq!(answer, outcome, "cancel {order}");
}

async fn reservations_confirm_cancel_expire(stock: Stock) {
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
    confirm(&stock, &sku, "r-expires", ConfirmOutcome::Expired).await;
    cancel(&stock, &sku, "r-expires", CancelOutcome::AlreadyReleased).await;

    confirm(&stock, &sku, "r-kept", ConfirmOutcome::Confirmed).await;
    confirm(&stock, &sku, "r-kept", ConfirmOutcome::AlreadyConfirmed).await;
    cancel(&stock, &sku, "r-kept", CancelOutcome::AlreadyConfirmed).await;

    let again = stock
        .reserve(&sku, 1, "r-cancel", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(matches!(again.outcome, ReserveOutcome::Reserved { .. }));
    cancel(&stock, &sku, "r-cancel", CancelOutcome::Cancelled).await;
    cancel(&stock, &sku, "r-cancel", CancelOutcome::AlreadyReleased).await;
    confirm(&stock, &sku, "r-cancel", ConfirmOutcome::Cancelled).await;
    confirm(&stock, &sku, "nobody", ConfirmOutcome::Unknown).await;

    let level = stock.audit(&sku).await.unwrap();
    assert_eq!(
        (level.available, level.reserved, level.sold, level.received),
        (1, 0, 1, 2)
    );
    assert!(level.is_balanced());
}

/// A deduction after a reservation ran out finds its unit back in stock: an order's first
/// outcome is final, so it must not be recorded out of stock while units wait to return.
async fn a_deduction_finds_expired_reservations_returned(stock: Stock) {
    let sku = unique("expired-then-sold");
    stock.restock(&sku, 1).await.unwrap();
    let held = stock
        .reserve(&sku, 1, "r-1", Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(held.outcome, ReserveOutcome::Reserved { remaining: 0 });
    // The reservation's time passing is what this waits for (the store's clock decides).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let sale = stock.deduct(&sku, 1, "d-1").await.unwrap();
    assert_eq!(sale.outcome, DeductOutcome::Deducted { remaining: 0 });
    let level = stock.audit(&sku).await.unwrap();
    assert_eq!((level.reserved, level.sold, level.available), (0, 1, 0));
    assert!(level.is_balanced());
}

async fn bad_input_is_typed(stock: Stock) {
    assert!(stock
        .deduct("", 1, "o")
        .await
        .unwrap_err()
        .is_invalid_input());
    for zero in [
        stock.deduct("s", 0, "o").await.unwrap_err(),
        stock
            .reserve("s", 0, "o", Duration::from_secs(1))
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(
                zero,
                LockError::InvalidInput {
                    what: "quantity",
                    ..
                }
            ),
            "{zero:?}"
        );
    }
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

/// Expands `$then!($($args)*; <every check of the stock suite>)`: the one list of checks, for
/// [`stock_suite!`] and for tests that run every check on one store of their own.
macro_rules! with_stock_checks {
    ($then:ident!($($args:tt)*)) => {
        $then! {
            $($args)*;
            exactly_n_sold_under_concurrency, retried_orders_deduct_once,
            reused_order_ids_are_refused, reservations_confirm_cancel_expire,
            a_deduction_finds_expired_reservations_returned, bad_input_is_typed
        }
    };
}

/// Runs every check of the stock suite, one after the other, on clones of `$stock`.
#[allow(unused_macros)]
macro_rules! run_stock_checks {
    ($stock:expr; $($check:ident),+) => {
        $( $check($stock.clone()).await; )+
    };
}

/// Expands to one test per check in module `$module`, each on the stock `$make` gives (an
/// async expression: `None` when its server is missing and may be).
macro_rules! stock_suite {
    ($module:ident, $make:expr) => {
        with_stock_checks!(stock_suite!($module, $make));
    };
    ($module:ident, $make:expr; $($check:ident),+) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    if let Some(stock) = $make.await {
                        timeout(BOUND, super::$check(stock)).await.expect("bounded");
                    }
                }
            )+
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

/// The SQL stock with `strategy`, on the server `variable` names.
#[cfg(any(feature = "postgres", feature = "mysql"))]
async fn sql<D: lock_core::stock::StockDialect>(
    variable: &str,
    strategy: lock_core::stock::StockStrategy,
) -> Option<Stock> {
    let url = lock_core::testing::server_url(variable).expect("test server")?;
    let store = lock_core::stock::SqlStock::<D>::builder(&url)
        .strategy(strategy)
        .connect()
        .await
        .unwrap();
    Some(Stock::new(store).with_namespace("test").unwrap())
}

#[cfg(feature = "postgres")]
mod postgres_stock {
    use lock_core::stock::StockStrategy;

    use super::*;

    type Db = sqlx::Postgres;
    const URL: &str = "LOCK_TEST_POSTGRES_URL";

    stock_suite!(for_update, sql::<Db>(URL, StockStrategy::ForUpdate));
    stock_suite!(optimistic, sql::<Db>(URL, StockStrategy::Optimistic));
    stock_suite!(conditional, sql::<Db>(URL, StockStrategy::Conditional));
}

#[cfg(feature = "mysql")]
mod mysql_stock {
    use lock_core::stock::StockStrategy;

    use super::*;

    type Db = sqlx::MySql;
    const URL: &str = "LOCK_TEST_MYSQL_URL";

    stock_suite!(for_update, sql::<Db>(URL, StockStrategy::ForUpdate));
    stock_suite!(optimistic, sql::<Db>(URL, StockStrategy::Optimistic));
    stock_suite!(conditional, sql::<Db>(URL, StockStrategy::Conditional));
}

/// The Redis stock, and a connection of its own to read the stock's keys.
#[cfg(feature = "redis")]
async fn redis_and_admin() -> Option<(Stock, redis::aio::MultiplexedConnection)> {
    let url = lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")?;
    let admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    Some((redis().await?, admin))
}

/// The Redis key of `sku`'s `part`: `""` (its level), `":deductions"` or `":reservations"`,
/// under the stack backend's default key prefix.
#[cfg(feature = "redis")]
fn redis_key(sku: &str, part: &str) -> String {
    format!("lock:stock:{{#test:{sku}}}{part}")
}

/// A SKU that was never restocked keeps no state for reads, and its refused orders only for
/// the retention time after the last one; a restocked SKU keeps its records.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn unknown_skus_are_forgotten_in_memory() {
    let memory = MemoryStock::new();
    let stock = Stock::new(memory.clone());
    for i in 0..1_000 {
        stock.level(&format!("random-{i}")).await.unwrap();
    }
    assert_eq!(memory.sku_count(), 0, "reads of unknown SKUs left state");
    for i in 0..10 {
        let refused = stock.deduct(&format!("random-{i}"), 1, "o").await.unwrap();
        assert!(matches!(
            refused.outcome,
            DeductOutcome::OutOfStock { available: 0 }
        ));
    }
    stock.restock("real", 1).await.unwrap();
    stock.deduct("real", 5, "too-many").await.unwrap();
    assert_eq!(memory.sku_count(), 11);
    // Within the retention a retried refused order still gets its first answer.
    assert!(stock.deduct("random-3", 1, "o").await.unwrap().duplicate);
    tokio::time::advance(lock_core::stock::UNKNOWN_SKU_RETENTION + Duration::from_secs(1)).await;
    for _ in 0..1_100 {
        stock.level("real").await.unwrap();
    }
    assert_eq!(memory.sku_count(), 1, "only the restocked SKU stays");
    assert!(stock.deduct("real", 5, "too-many").await.unwrap().duplicate);
}

/// The same rule in Redis: records of never-stocked SKUs expire, restocking keeps them.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_skus_expire_in_redis() {
    let Some((stock, mut admin)) = redis_and_admin().await else {
        return;
    };
    let sku = unique("unknown");
    let key = |part: &str| redis_key(&sku, part);
    stock.level(&sku).await.unwrap();
    stock.deduct(&sku, 1, "o-1").await.unwrap();
    stock
        .reserve(&sku, 1, "r-1", Duration::from_secs(60))
        .await
        .unwrap();
    let retention = i64::try_from(lock_core::stock::UNKNOWN_SKU_RETENTION.as_millis()).unwrap();
    for part in [":deductions", ":reservations"] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key(part))
            .query_async(&mut admin)
            .await
            .unwrap();
        assert!(0 < ttl && ttl <= retention, "{part}: TTL {ttl} ms");
    }
    let level: i64 = redis::cmd("EXISTS")
        .arg(key(""))
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(level, 0, "a read created the level hash");
    stock.restock(&sku, 1).await.unwrap();
    for part in [":deductions", ":reservations", ""] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key(part))
            .query_async(&mut admin)
            .await
            .unwrap();
        assert_eq!(ttl, -1, "{part:?} of a stocked SKU must be kept");
    }
}

/// Records written before quantities were kept (`D|<remaining>`, `O|0|<available>`) still
/// answer a retry as a duplicate, whatever its quantity.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_without_a_quantity_stay_duplicates_in_redis() {
    let Some((stock, mut admin)) = redis_and_admin().await else {
        return;
    };
    let sku = unique("legacy");
    stock.restock(&sku, 5).await.unwrap();
    let key = |part: &str| redis_key(&sku, part);
    for (part, record) in [(":deductions", "D|3"), (":reservations", "O|0|1")] {
        let _: i64 = redis::cmd("HSET")
            .arg(key(part))
            .arg("old")
            .arg(record)
            .query_async(&mut admin)
            .await
            .unwrap();
    }
    let deduction = stock.deduct(&sku, 4, "old").await.unwrap();
    assert_eq!(
        (deduction.outcome, deduction.duplicate),
        (DeductOutcome::Deducted { remaining: 3 }, true)
    );
    let reservation = stock
        .reserve(&sku, 4, "old", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        (reservation.outcome, reservation.duplicate),
        (ReserveOutcome::OutOfStock { available: 1 }, true)
    );
    assert_eq!(stock.level(&sku).await.unwrap().available, 5);
}

#[cfg(feature = "redis")]
mod redis_store;
