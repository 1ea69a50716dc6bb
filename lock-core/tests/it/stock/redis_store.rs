//! The Redis stock beyond the stock conformance suite: its keys live under the backend's key
//! prefix (two applications with the same SKU names keep apart; an ACL user limited to its
//! prefix runs the whole suite).

use std::time::Duration;

use lock_core::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, RedisStock, ReserveOutcome, Stock,
};
use lock_core::testing::unique;
use lock_core::RedisBackend;
use tokio::time::timeout;

use super::*;
use crate::acl_support::AclRedis;

/// The keys of the server whose names hold `name`.
async fn keys_naming(
    connection: &mut redis::aio::MultiplexedConnection,
    name: &str,
) -> Vec<String> {
    let mut cursor = 0u64;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("*{name}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(connection)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Two applications on the stack's Redis with key prefixes of their own and the same SKU and
/// order names: each sells its own stock (the same order id is new to each), and every key
/// naming the SKU is under one of the prefixes, each prefix holding its SKU's level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_prefixes_keep_their_stock_apart() {
    let Some(url) = lock_core::testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
    else {
        return;
    };
    timeout(BOUND, async {
        let prefixes = [unique("stock-a"), unique("stock-b")];
        let mut stocks = Vec::new();
        for prefix in &prefixes {
            let backend = RedisBackend::builder(url.as_str())
                .key_prefix(prefix.as_str())
                .connect()
                .await
                .unwrap();
            stocks.push(
                Stock::new(RedisStock::new(&backend))
                    .with_namespace("shop")
                    .unwrap(),
            );
        }
        let sku = unique("shared-sku");
        let ttl = Duration::from_secs(60);
        for (stock, units) in stocks.iter().zip([5, 3]) {
            stock.restock(&sku, units).await.unwrap();
            let sale = stock.deduct(&sku, 1, "o-1").await.unwrap();
            assert_eq!(
                (sale.outcome, sale.duplicate),
                (
                    DeductOutcome::Deducted {
                        remaining: units - 1
                    },
                    false
                ),
                "the order o-1 of the other prefix's stock"
            );
            for order in ["r-1", "r-2"] {
                let held = stock.reserve(&sku, 1, order, ttl).await.unwrap();
                assert!(
                    matches!(held.outcome, ReserveOutcome::Reserved { .. }) && !held.duplicate,
                    "{order}: {held:?}"
                );
            }
            assert_eq!(
                stock.confirm(&sku, "r-1").await.unwrap(),
                ConfirmOutcome::Confirmed
            );
            assert_eq!(
                stock.cancel(&sku, "r-2").await.unwrap(),
                CancelOutcome::Cancelled
            );
        }
        for (stock, units) in stocks.iter().zip([5, 3]) {
            let level = stock.audit(&sku).await.unwrap();
            assert_eq!(
                (level.available, level.reserved, level.sold, level.received),
                (units - 2, 0, 2, units)
            );
        }

        let mut admin = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let keys = keys_naming(&mut admin, &sku).await;
        let outside: Vec<&String> = keys
            .iter()
            .filter(|key| !prefixes.iter().any(|p| key.starts_with(&format!("{p}:"))))
            .collect();
        assert!(
            outside.is_empty(),
            "keys under neither prefix: {outside:#?}"
        );
        for prefix in &prefixes {
            let level = format!("{prefix}:stock:{{#shop:{sku}}}");
            assert!(keys.contains(&level), "no level {level:?} in {keys:#?}");
        }
    })
    .await
    .expect("bounded");
}

/// A Redis ACL user limited to its prefix (`~svc:*`, `&svc:*`, `+@all -@dangerous`, on a
/// server of the test's own) runs every check of the stock conformance suite on a stock made
/// from a backend with that prefix; the server logs no refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_limited_to_its_prefix_runs_the_stock_suite() {
    let acl = AclRedis::start("svc").await;
    let backend = acl.backend().await;
    let stock = Stock::new(RedisStock::new(&backend))
        .with_namespace("test")
        .unwrap();
    timeout(BOUND * 2, async {
        with_stock_checks!(run_stock_checks!(stock));
    })
    .await
    .expect("bounded");
    acl.assert_no_refusals().await;
}
