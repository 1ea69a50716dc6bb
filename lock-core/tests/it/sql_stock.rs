//! The SQL stock stores (`PostgresStock`, `MySqlStock`) beyond the stock conformance suite
//! (`stock.rs` runs that on both, for each strategy): two processes selling the same order ids
//! of one SKU at once, the database crashed mid-sale, and the records of SKUs never restocked
//! swept away.
//!
//! The two-process test starts this test binary again as the second seller
//! (`LOCK_TEST_SQL_STOCK_CHILD` set), as the cache and SQL kill tests do. The crash test runs a
//! database server of its own (`lock_testing::SqlServer`): the stack's are shared by the
//! tests running beside it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::sql::{Dialect, SqlStock, StockStrategy};
use lock_core::stock::{DeductOutcome, Stock};
use lock_core::LockError;
use lock_testing::{free_port, unique, SqlKind, SqlServer};
use tokio::sync::Notify;
use tokio::time::{timeout, Instant};

use crate::child_support::ChildTest;

const CHILD_ENV: &str = "LOCK_TEST_SQL_STOCK_CHILD";
/// `child_process`'s name in the test binary, as `--exact` wants it.
const CHILD_TEST: &str = "sql_stock::child_process";
/// Bound on each test.
const BOUND: Duration = Duration::from_secs(120);
/// Sellers per process.
const TASKS: u64 = 32;
/// Order ids each process sells (the same ids in both).
const ORDERS: u64 = 300;
/// Units on sale.
const UNITS: u64 = 100;

/// The stock of database `db` (`postgres` or `mysql`) at `url`, taking units by `strategy`.
async fn stock_at(db: &str, url: &str, strategy: StockStrategy) -> Stock {
    let stock = match db {
        #[cfg(feature = "postgres")]
        "postgres" => Stock::builder(store::<sqlx::Postgres>(url, strategy).await),
        #[cfg(feature = "mysql")]
        "mysql" => Stock::builder(store::<sqlx::MySql>(url, strategy).await),
        other => panic!("no SQL stock {other}"),
    };
    stock.namespace("sql-stock").build().unwrap()
}

async fn store<D: Dialect>(url: &str, strategy: StockStrategy) -> SqlStock<D> {
    SqlStock::<D>::builder(url)
        .strategy(strategy)
        .connect()
        .await
        .unwrap()
}

/// The stack's server of `db`, or `None` when it is not configured and need not be.
fn stack_url(db: &str) -> Option<String> {
    let variable = match db {
        "postgres" => "LOCK_TEST_POSTGRES_URL",
        _ => "LOCK_TEST_MYSQL_URL",
    };
    lock_testing::server_url(variable).expect("test server")
}

/// Sells `ORDERS` order ids of `sku` from `TASKS` tasks: each order's outcome (taken?) and
/// whether it was a duplicate. Nothing may fail.
async fn sell(stock: &Stock, sku: &str) -> HashMap<u64, (bool, bool)> {
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (stock, sku) = (stock.clone(), sku.to_owned());
            tokio::spawn(async move {
                let mut sold = Vec::new();
                for order in (task..ORDERS).step_by(TASKS as usize) {
                    let id = format!("o-{order}");
                    // The optimistic strategy gives up with `Busy` after its tries, all lost
                    // to other sellers (64 of them here, on a loaded machine): as a client
                    // would, sell the same order again (its id makes that safe).
                    let deduction = loop {
                        match stock.deduct(&sku, 1, &id).await {
                            Err(LockError::Busy { .. }) => continue,
                            other => break other.unwrap(),
                        }
                    };
                    let taken = matches!(deduction.outcome, DeductOutcome::Deducted { .. });
                    sold.push((order, (taken, deduction.duplicate)));
                }
                sold
            })
        })
        .collect();
    let mut all = HashMap::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

/// Runs only as the second seller: sells the same order ids as the parent, then prints each
/// outcome as `SOLD <order> <taken> <duplicate>` and `DONE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process() {
    let Ok(request) = std::env::var(CHILD_ENV) else {
        return;
    };
    let [db, strategy, sku] = request.splitn(3, ':').collect::<Vec<_>>()[..] else {
        panic!("bad child request {request}");
    };
    let url = stack_url(db).unwrap();
    let stock = stock_at(db, &url, strategy.parse().unwrap()).await;
    println!("READY");
    for (order, (taken, duplicate)) in sell(&stock, sku).await {
        println!("SOLD {order} {} {}", u8::from(taken), u8::from(duplicate));
    }
    println!("DONE");
}

/// Two processes × `TASKS` tasks sell the same `ORDERS` order ids of one SKU of `UNITS` units:
/// exactly `UNITS` orders take a unit, both processes agree on each order's outcome, each
/// order is recorded once (one side sees the other's as a duplicate, or both sell it out of
/// stock), and the store balances at 0 left.
async fn two_processes_sell_exactly_n(db: &str, strategy: StockStrategy) {
    let Some(url) = stack_url(db) else { return };
    let stock = stock_at(db, &url, strategy).await;
    let sku = unique("two-processes");
    stock.restock(&sku, UNITS, "delivery-1").await.unwrap();
    let mut child = ChildTest::start(CHILD_TEST, CHILD_ENV, &format!("{db}:{strategy}:{sku}"));
    child.line_with("READY").await;
    let here = sell(&stock, &sku).await;
    let mut there = HashMap::new();
    loop {
        let line = child.next_line().await.expect("child ended early");
        if line.contains("DONE") {
            break;
        }
        let Some(at) = line.find("SOLD ") else {
            continue;
        };
        let fields: Vec<u64> = line[at + 5..]
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect();
        there.insert(fields[0], (fields[1] == 1, fields[2] == 1));
    }
    assert_eq!(
        (here.len(), there.len()),
        (ORDERS as usize, ORDERS as usize)
    );
    let mut taken = 0;
    for order in 0..ORDERS {
        let ((a_taken, a_dup), (b_taken, b_dup)) = (here[&order], there[&order]);
        assert_eq!(a_taken, b_taken, "order {order}: the processes disagree");
        assert!(a_dup || b_dup, "order {order} recorded by both processes");
        assert!(!(a_dup && b_dup), "order {order} recorded by neither");
        taken += u64::from(a_taken);
    }
    assert_eq!(taken, UNITS, "orders that took a unit");
    let level = stock.audit(&sku).await.unwrap();
    assert_eq!((level.available, level.sold), (0, UNITS));
    assert!(level.is_balanced(), "{level:?}");
}

/// Sells `ORDERS` order ids from `TASKS` tasks while the database crashes once a third of the
/// units are sold (immediate shutdown / `SIGKILL`) and comes back: every seller retries its
/// order until it gets an answer (a retry of a sale whose reply was lost answers it as a
/// duplicate). Every sale answered is in the store after recovery, and nothing more: sold is
/// exactly `UNITS`, and exactly the orders answered as taken.
async fn a_crash_loses_no_confirmed_sale(kind: SqlKind) {
    if stack_url(match kind {
        SqlKind::Postgres => "postgres",
        SqlKind::MariaDb => "mysql",
    })
    .is_none()
    {
        return; // no database installed here, and none required
    }
    let dir = std::env::temp_dir().join(unique("sql-stock-crash"));
    let mut server =
        tokio::task::block_in_place(|| SqlServer::start(kind, free_port(), dir.clone()));
    let db = match kind {
        SqlKind::Postgres => "postgres",
        SqlKind::MariaDb => "mysql",
    };
    for strategy in StockStrategy::ALL {
        let stock = stock_at(db, &server.url(), strategy).await;
        let sku = unique("crash");
        stock.restock(&sku, UNITS, "delivery-1").await.unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let third = Arc::new(Notify::new());
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let (stock, sku) = (stock.clone(), sku.clone());
                let (answered, third) = (answered.clone(), third.clone());
                tokio::spawn(async move {
                    let mut taken = Vec::new();
                    let mut failures = 0;
                    for order in (task..ORDERS).step_by(TASKS as usize) {
                        let id = format!("o-{order}");
                        let started = Instant::now();
                        let deduction = loop {
                            match stock.deduct(&sku, 1, &id).await {
                                Ok(deduction) => break deduction,
                                Err(error) => {
                                    assert!(error.is_unavailable(), "{error}");
                                    assert!(started.elapsed() < Duration::from_secs(60));
                                    failures += 1;
                                    tokio::time::sleep(Duration::from_millis(50)).await;
                                }
                            }
                        };
                        if matches!(deduction.outcome, DeductOutcome::Deducted { .. }) {
                            taken.push(order);
                            if answered.fetch_add(1, Ordering::SeqCst) + 1 == UNITS / 3 {
                                third.notify_one();
                            }
                        }
                    }
                    (taken, failures)
                })
            })
            .collect();
        third.notified().await;
        let sold_before = answered.load(Ordering::SeqCst);
        tokio::task::block_in_place(|| {
            server.crash();
            server.spawn();
        });
        let mut taken = Vec::new();
        let mut failures = 0;
        for task in tasks {
            let (orders, failed) = task.await.unwrap();
            taken.extend(orders);
            failures += failed;
        }
        taken.sort_unstable();
        taken.dedup();
        let level = stock.audit(&sku).await.unwrap();
        assert_eq!(
            taken.len() as u64,
            UNITS,
            "{strategy}: orders answered as taken"
        );
        assert_eq!(
            level.sold, UNITS,
            "{strategy}: sales in the store after recovery"
        );
        assert!(level.is_balanced() && level.available == 0, "{level:?}");
        eprintln!(
            "{db} {strategy}: crashed after {sold_before} sales; {failures} calls failed while \
             it was down and were retried; {} sold, all {UNITS} answered sales recorded",
            level.sold
        );
    }
    drop(server);
    std::fs::remove_dir_all(dir).ok();
}

/// The records of a SKU never restocked (orders naming a SKU that does not exist) go at the
/// sweep; a restocked SKU's stay.
async fn unknown_skus_are_swept(db: &str) {
    let Some(url) = stack_url(db) else { return };
    let stock = stock_at(db, &url, StockStrategy::default()).await;
    let store = match db {
        #[cfg(feature = "postgres")]
        "postgres" => {
            Sweeper::Postgres(store::<sqlx::Postgres>(&url, StockStrategy::default()).await)
        }
        #[cfg(feature = "mysql")]
        "mysql" => Sweeper::MySql(store::<sqlx::MySql>(&url, StockStrategy::default()).await),
        other => panic!("no SQL stock {other}"),
    };
    let (ghost, real) = (unique("ghost"), unique("real"));
    stock.restock(&real, 1, "delivery-1").await.unwrap();
    for sku in [&ghost, &real] {
        assert!(!stock.deduct(sku, 1, "order-1").await.unwrap().duplicate);
        assert!(stock.deduct(sku, 1, "order-1").await.unwrap().duplicate);
    }
    assert!(store.sweep().await > 0);
    // The ghost's record is gone (the same order is new again); the real SKU's stays.
    assert!(!stock.deduct(&ghost, 1, "order-1").await.unwrap().duplicate);
    assert!(stock.deduct(&real, 1, "order-1").await.unwrap().duplicate);
}

/// A store to sweep with no retention, whichever database.
enum Sweeper {
    #[cfg(feature = "postgres")]
    Postgres(SqlStock<sqlx::Postgres>),
    #[cfg(feature = "mysql")]
    MySql(SqlStock<sqlx::MySql>),
}

impl Sweeper {
    async fn sweep(&self) -> u64 {
        match self {
            #[cfg(feature = "postgres")]
            Self::Postgres(store) => store
                .sweep_unknown_older_than(Duration::ZERO)
                .await
                .unwrap(),
            #[cfg(feature = "mysql")]
            Self::MySql(store) => store
                .sweep_unknown_older_than(Duration::ZERO)
                .await
                .unwrap(),
        }
    }
}

macro_rules! sql_stock_suite {
    ($module:ident, $db:literal, $kind:expr) => {
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_processes_sell_exactly_n_for_update() {
                let run = two_processes_sell_exactly_n($db, StockStrategy::ForUpdate);
                timeout(BOUND, run).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_processes_sell_exactly_n_optimistic() {
                let run = two_processes_sell_exactly_n($db, StockStrategy::Optimistic);
                timeout(BOUND, run).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn two_processes_sell_exactly_n_conditional() {
                let run = two_processes_sell_exactly_n($db, StockStrategy::Conditional);
                timeout(BOUND, run).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_crash_loses_no_confirmed_sale() {
                timeout(BOUND, super::a_crash_loses_no_confirmed_sale($kind))
                    .await
                    .unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn unknown_skus_are_swept() {
                timeout(BOUND, super::unknown_skus_are_swept($db))
                    .await
                    .unwrap();
            }
        }
    };
}

#[cfg(feature = "postgres")]
sql_stock_suite!(postgres, "postgres", SqlKind::Postgres);
#[cfg(feature = "mysql")]
sql_stock_suite!(mysql, "mysql", SqlKind::MariaDb);
