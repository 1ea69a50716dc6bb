//! The stock primitive on memory and on a real Redis: exactly N sold for a stock of N under
//! concurrency, idempotent order ids, reservations that expire back into stock.

use std::time::Duration;

use lock_core::memory::MemoryStock;
use lock_core::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, ReserveOutcome, Restock, Stock, DEFAULT_RETENTION,
};
use lock_core::LockError;
use lock_testing::unique;
use tokio::time::{timeout, Instant};

/// Every check ends within this, pass or fail.
const BOUND: Duration = Duration::from_secs(30);

async fn exactly_n_sold_under_concurrency(stock: Stock) {
    let sku = unique("flash");
    stock.restock(&sku, 50, "delivery-1").await.unwrap();
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
    stock.restock(&sku, 3, "delivery-1").await.unwrap();
    let first = stock.deduct(&sku, 2, "o-1").await.unwrap();
    assert_eq!(first.outcome, DeductOutcome::Deducted { remaining: 1 });
    assert!(!first.duplicate);
    let again = stock.deduct(&sku, 2, "o-1").await.unwrap();
    assert_eq!((again.outcome, again.duplicate), (first.outcome, true));
    let refused = stock.deduct(&sku, 2, "o-2").await.unwrap();
    assert_eq!(refused.outcome, DeductOutcome::OutOfStock { available: 1 });
    // A refused order stays refused, even after a restock: its first outcome is the answer.
    stock.restock(&sku, 5, "delivery-2").await.unwrap();
    let refused_again = stock.deduct(&sku, 2, "o-2").await.unwrap();
    assert_eq!(
        (refused_again.outcome, refused_again.duplicate),
        (refused.outcome, true)
    );
    assert_eq!(stock.level(&sku).await.unwrap().sold, 2);
}

/// A restock carries an id, as an order does: retried (the same call again, as a client whose
/// reply was lost sends it) it adds nothing and says so, with the level now; the same id with
/// another quantity is refused; another id adds; concurrent retries of one restock add once.
async fn retried_restocks_add_once(stock: Stock) {
    let sku = unique("restock-retry");
    let level = |restock: Restock| {
        let level = restock.level;
        (level.available, level.received, restock.duplicate)
    };
    let first = stock.restock(&sku, 5, "delivery-1").await.unwrap();
    assert_eq!(level(first), (5, 5, false));
    stock.deduct(&sku, 2, "o-1").await.unwrap();
    let retry = stock.restock(&sku, 5, "delivery-1").await.unwrap();
    assert_eq!(
        level(retry),
        (3, 5, true),
        "the retry added its units again"
    );
    let reused = stock.restock(&sku, 4, "delivery-1").await.unwrap_err();
    assert!(
        matches!(
            &reused,
            LockError::InvalidInput { what: "restock id", reason } if reason.contains("quantity 5, not 4")
        ),
        "{reused:?}"
    );
    let second = stock.restock(&sku, 4, "delivery-2").await.unwrap();
    assert_eq!(level(second), (7, 9, false));
    // A restock id is no order id: the same text names another request.
    assert!(!stock.restock(&sku, 1, "o-1").await.unwrap().duplicate);

    let raced = unique("restock-race");
    let tries: Vec<_> = (0..8)
        .map(|_| {
            let (stock, raced) = (stock.clone(), raced.clone());
            tokio::spawn(async move { stock.restock(&raced, 3, "delivery-x").await.unwrap() })
        })
        .collect();
    let mut added = 0;
    for tried in tries {
        added += usize::from(!tried.await.unwrap().duplicate);
    }
    assert_eq!(added, 1, "restocks that added");
    let raced_level = stock.audit(&raced).await.unwrap();
    assert_eq!((raced_level.available, raced_level.received), (3, 3));
    let audit = stock.audit(&sku).await.unwrap();
    assert_eq!((audit.available, audit.sold, audit.received), (8, 2, 10));
    assert!(audit.is_balanced());
}

/// The same order id with another quantity is not a retry: refused, typed, nothing changes.
async fn reused_order_ids_are_refused(stock: Stock) {
    let sku = unique("reused");
    stock.restock(&sku, 5, "delivery-1").await.unwrap();
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

    stock.restock(&sku, 4, "delivery-2").await.unwrap();
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
    stock.restock(&sku, 2, "delivery-1").await.unwrap();
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
    stock.restock(&sku, 1, "delivery-1").await.unwrap();
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
    for (quantity, id, what) in [
        (0, "d", "quantity"),
        (1, "", "restock id"),
        (1, "a\0b", "restock id"),
    ] {
        let refused = stock.restock("s", quantity, id).await.unwrap_err();
        assert!(
            matches!(refused, LockError::InvalidInput { what: w, .. } if w == what),
            "{refused:?}"
        );
    }
    let too_long = "x".repeat(lock_core::stock::MAX_ORDER_ID_LEN + 1);
    assert!(stock
        .restock("s", 1, &too_long)
        .await
        .unwrap_err()
        .is_invalid_input());
    assert!(stock
        .reserve("s", 1, "o", Duration::ZERO)
        .await
        .unwrap_err()
        .is_invalid_input());
}

/// A retention short enough for a test to wait out.
const SHORT_RETENTION: Duration = Duration::from_secs(2);

/// On a store with [`SHORT_RETENTION`]: each record is kept for the retention from the moment
/// it is final and forgotten after it. A retry inside it answers the first outcome and takes
/// nothing; the same order id after it is a new order (refusals included); a reservation is
/// kept while it holds units, however long, and a cancelled one only the retention after its
/// cancel.
async fn records_are_forgotten_after_the_retention(stock: Stock) {
    let sku = unique("retention");
    let hour = Duration::from_secs(60 * 60);
    let started = Instant::now();
    stock.restock(&sku, 10, "delivery-1").await.unwrap();
    stock.reserve(&sku, 1, "r-cancelled", hour).await.unwrap();
    cancel(&stock, &sku, "r-cancelled", CancelOutcome::Cancelled).await;
    let refused = stock.deduct(&sku, 100, "too-many").await.unwrap();
    assert_eq!(refused.outcome, DeductOutcome::OutOfStock { available: 10 });
    let first = stock.deduct(&sku, 1, "o-1").await.unwrap();
    assert_eq!(
        (first.outcome, first.duplicate),
        (DeductOutcome::Deducted { remaining: 9 }, false)
    );
    let live = stock.reserve(&sku, 1, "r-live", hour).await.unwrap();
    assert_eq!(live.outcome, ReserveOutcome::Reserved { remaining: 8 });

    // Inside the retention: a retry gets the first outcome, nothing is taken (or added) twice.
    let retry = stock.deduct(&sku, 1, "o-1").await.unwrap();
    assert_eq!((retry.outcome, retry.duplicate), (first.outcome, true));
    assert!(
        stock
            .restock(&sku, 10, "delivery-1")
            .await
            .unwrap()
            .duplicate
    );
    let level = stock.level(&sku).await.unwrap();
    assert_eq!((level.sold, level.received), (1, 10));

    // After it the same order id is a new order. The store's clock decides when: each try
    // before that is a retry, answered as one and changing nothing.
    let again = timeout(SHORT_RETENTION + Duration::from_secs(20), async {
        loop {
            let again = stock.deduct(&sku, 1, "o-1").await.unwrap();
            if !again.duplicate {
                return again;
            }
            assert_eq!(again.outcome, first.outcome);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the order's record was never forgotten");
    let waited = started.elapsed();
    assert!(waited >= SHORT_RETENTION, "forgotten after {waited:?}");
    assert_eq!(again.outcome, DeductOutcome::Deducted { remaining: 7 });
    // Recorded before it, the restock, the refusal and the cancelled reservation are
    // forgotten too.
    let restocked_again = stock.restock(&sku, 10, "delivery-1").await.unwrap();
    assert!(!restocked_again.duplicate);
    let refused_again = stock.deduct(&sku, 100, "too-many").await.unwrap();
    assert_eq!(
        (refused_again.outcome, refused_again.duplicate),
        (DeductOutcome::OutOfStock { available: 17 }, false)
    );
    cancel(&stock, &sku, "r-cancelled", CancelOutcome::Unknown).await;
    // The live reservation is kept however long it holds its units.
    let live_retry = stock.reserve(&sku, 1, "r-live", hour).await.unwrap();
    assert_eq!(
        (live_retry.outcome, live_retry.duplicate),
        (live.outcome, true)
    );
    confirm(&stock, &sku, "r-live", ConfirmOutcome::Confirmed).await;

    let level = stock.audit(&sku).await.unwrap();
    assert_eq!(
        (level.available, level.reserved, level.sold, level.received),
        (17, 0, 3, 20)
    );
}

/// Expands `$then!($($args)*; <every check of the stock suite>)`: the one list of checks, for
/// [`stock_suite!`] and for tests that run every check on one store of their own.
macro_rules! with_stock_checks {
    ($then:ident!($($args:tt)*)) => {
        $then! {
            $($args)*;
            exactly_n_sold_under_concurrency, retried_orders_deduct_once, retried_restocks_add_once,
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

/// Expands to one test per check in module `$module`, each on the stock `$make(retention)`
/// gives (`$make` a function of the store's retention returning a future: `None` when its
/// server is missing and may be): every check of [`with_stock_checks!`] with the default
/// retention, and [`records_are_forgotten_after_the_retention`] with [`SHORT_RETENTION`].
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
                    if let Some(stock) = ($make)(DEFAULT_RETENTION).await {
                        timeout(BOUND, super::$check(stock)).await.expect("bounded");
                    }
                }
            )+

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn records_are_forgotten_after_the_retention() {
                if let Some(stock) = ($make)(SHORT_RETENTION).await {
                    let check = super::records_are_forgotten_after_the_retention(stock);
                    timeout(BOUND, check).await.expect("bounded");
                }
            }
        }
    };
}

async fn memory(retention: Duration) -> Option<Stock> {
    let store = MemoryStock::with_retention(retention).unwrap();
    Some(Stock::builder(store).namespace("test").build().unwrap())
}

stock_suite!(memory_stock, memory);

#[cfg(feature = "redis")]
async fn redis(retention: Duration) -> Option<Stock> {
    let url = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")?;
    let backend = lock_core::RedisBackend::connect(&url).await.unwrap();
    let store = lock_core::redis::RedisStock::from_backend(&backend)
        .with_retention(retention)
        .unwrap();
    Some(Stock::builder(store).namespace("test").build().unwrap())
}

#[cfg(feature = "redis")]
stock_suite!(redis_stock, redis);

/// The stock on a Redis Cluster or Sentinel deployment of the stack.
#[cfg(feature = "redis")]
async fn on_deployment(
    deployment: Option<crate::redis_support::Deployment>,
    retention: Duration,
) -> Option<Stock> {
    let backend = deployment?.backend().await;
    let store = lock_core::redis::RedisStock::from_backend(&backend)
        .with_retention(retention)
        .unwrap();
    Some(Stock::builder(store).namespace("test").build().unwrap())
}

#[cfg(feature = "redis")]
stock_suite!(redis_cluster_stock, |retention| on_deployment(
    crate::redis_support::Deployment::cluster(),
    retention
));
#[cfg(feature = "redis")]
stock_suite!(redis_sentinel_stock, |retention| on_deployment(
    crate::redis_support::Deployment::sentinel(),
    retention
));

/// The SQL stock with `strategy` and `retention`, on the server `variable` names.
#[cfg(any(feature = "postgres", feature = "mysql"))]
async fn sql<D: lock_core::sql::Dialect>(
    variable: &str,
    strategy: lock_core::sql::StockStrategy,
    retention: Duration,
) -> Option<Stock> {
    let url = lock_testing::server_url(variable).expect("test server")?;
    let store = lock_core::sql::SqlStock::<D>::builder(&url)
        .strategy(strategy)
        .retention(retention)
        .connect()
        .await
        .unwrap();
    Some(Stock::builder(store).namespace("test").build().unwrap())
}

/// The SQL stock suites of database `$db`, on the server `$url` names, one per strategy.
#[cfg(any(feature = "postgres", feature = "mysql"))]
macro_rules! sql_stock_suites {
    ($db:ty, $url:expr) => {
        use lock_core::sql::StockStrategy;

        use super::*;

        stock_suite!(for_update, |retention| sql::<$db>(
            $url,
            StockStrategy::ForUpdate,
            retention
        ));
        stock_suite!(optimistic, |retention| sql::<$db>(
            $url,
            StockStrategy::Optimistic,
            retention
        ));
        stock_suite!(conditional, |retention| sql::<$db>(
            $url,
            StockStrategy::Conditional,
            retention
        ));
    };
}

#[cfg(feature = "postgres")]
mod postgres_stock {
    sql_stock_suites!(sqlx::Postgres, "LOCK_TEST_POSTGRES_URL");
}

#[cfg(feature = "mysql")]
mod mysql_stock {
    sql_stock_suites!(sqlx::MySql, "LOCK_TEST_MYSQL_URL");
}

/// The Redis stock, and a connection of its own to read the stock's keys.
#[cfg(feature = "redis")]
async fn redis_and_admin() -> Option<(Stock, redis::aio::MultiplexedConnection)> {
    let url = lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")?;
    let admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    Some((redis(DEFAULT_RETENTION).await?, admin))
}

/// The Redis key of `sku`'s `part`: `""` (its level), `":records"` or `":timeline"`, under the
/// stack backend's default key prefix.
#[cfg(feature = "redis")]
fn redis_key(sku: &str, part: &str) -> String {
    format!("lock:stock:{{#test:{sku}}}{part}")
}

/// A SKU that was never restocked keeps no state for reads, and its refused orders only for
/// `UNKNOWN_SKU_RETENTION` after the last one; a restocked SKU keeps its records for the
/// store's retention (a week).
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
    stock.restock("real", 1, "delivery-1").await.unwrap();
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

/// On a paused clock, 100,000 distinct orders on one SKU of a memory store with a 60 s
/// retention, one a millisecond: no more records are kept than the orders of the last 60 s
/// (and the restock's), and the retention's orders are all still recognised.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn memory_keeps_the_records_of_one_retention() {
    let retention = Duration::from_secs(60);
    let memory = MemoryStock::with_retention(retention).unwrap();
    let stock = Stock::new(memory.clone());
    stock.restock("sku", 1_000, "delivery-1").await.unwrap();
    let mut most = 0;
    for n in 0..100_000 {
        stock.deduct("sku", 1, &format!("o-{n}")).await.unwrap();
        most = most.max(memory.record_count());
        tokio::time::advance(Duration::from_millis(1)).await;
    }
    assert!(most <= 60_001, "{most} records kept");
    assert!(stock.deduct("sku", 1, "o-40001").await.unwrap().duplicate);
    assert!(!stock.deduct("sku", 1, "o-39000").await.unwrap().duplicate);
}

/// The same rule in Redis: the records of never-stocked SKUs expire within
/// `UNKNOWN_SKU_RETENTION`; restocking gives them the store's retention (a week, and up to a
/// sixteenth more), the level never expires.
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
    let unknown = i64::try_from(lock_core::stock::UNKNOWN_SKU_RETENTION.as_millis()).unwrap();
    let retention = i64::try_from(DEFAULT_RETENTION.as_millis()).unwrap();
    for part in [":records", ":timeline"] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key(part))
            .query_async(&mut admin)
            .await
            .unwrap();
        assert!(0 < ttl && ttl <= unknown, "{part}: TTL {ttl} ms");
    }
    let level: i64 = redis::cmd("EXISTS")
        .arg(key(""))
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(level, 0, "a read created the level hash");
    stock.restock(&sku, 1, "delivery-1").await.unwrap();
    for part in [":records", ":timeline", ""] {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key(part))
            .query_async(&mut admin)
            .await
            .unwrap();
        if part.is_empty() {
            assert_eq!(ttl, -1, "the level of a stocked SKU must be kept");
        } else {
            // The retention and at most a sixteenth more (the store sets that much ahead).
            assert!(
                unknown < ttl && ttl <= retention + retention / 16,
                "{part}: TTL {ttl} ms"
            );
        }
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
    stock.restock(&sku, 5, "delivery-1").await.unwrap();
    let key = |part: &str| redis_key(&sku, part);
    for (field, record) in [("d|old", "D|3"), ("r|old", "O|0|1")] {
        let _: i64 = redis::cmd("HSET")
            .arg(key(":records"))
            .arg(field)
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
