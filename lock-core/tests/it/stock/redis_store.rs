//! The Redis stock beyond the stock conformance suite: its keys live under the backend's key
//! prefix (two applications with the same SKU names keep apart; an ACL user limited to its
//! prefix runs the whole suite).

use std::time::Duration;

use lock_core::redis::RedisStock;
use lock_core::stock::{CancelOutcome, ConfirmOutcome, DeductOutcome, ReserveOutcome, Stock};
use lock_core::RedisBackend;
use lock_testing::unique;
use tokio::time::timeout;

use super::*;
use crate::acl_support::AclRedis;
use crate::redis_support::{admin_connection, keys_naming, prefixed_backend, redis_url};

/// Two applications on the stack's Redis with key prefixes of their own and the same SKU and
/// order names: each sells its own stock (the same order id is new to each), and every key
/// naming the SKU is under one of the prefixes, each prefix holding its SKU's level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_prefixes_keep_their_stock_apart() {
    let Some(url) = redis_url() else {
        return;
    };
    timeout(BOUND, async {
        let prefixes = [unique("stock-a"), unique("stock-b")];
        let mut stocks = Vec::new();
        for prefix in &prefixes {
            let backend = prefixed_backend(&url, prefix).await;
            stocks.push(
                Stock::builder(RedisStock::from_backend(&backend))
                    .namespace("shop")
                    .build()
                    .unwrap(),
            );
        }
        let sku = unique("shared-sku");
        let ttl = Duration::from_secs(60);
        for (stock, units) in stocks.iter().zip([5, 3]) {
            stock.restock(&sku, units, "delivery-1").await.unwrap();
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

        let mut admin = admin_connection(&url).await;
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
    let stock = Stock::builder(RedisStock::from_backend(&backend))
        .namespace("test")
        .build()
        .unwrap();
    timeout(BOUND * 2, async {
        with_stock_checks!(run_stock_checks!(stock));
    })
    .await
    .expect("bounded");
    acl.assert_no_refusals().await;
}

/// A stock with `retention` on `backend`, namespace `test`, and its store.
fn stock_with(backend: &RedisBackend, retention: Duration) -> (Stock, RedisStock) {
    let store = RedisStock::from_backend(backend)
        .with_retention(retention)
        .unwrap();
    let stock = Stock::builder(store.clone())
        .namespace("test")
        .build()
        .unwrap();
    (stock, store)
}

/// The fields of `sku`'s records hash and the entries of its timeline.
async fn records_and_timeline(
    admin: &mut redis::aio::MultiplexedConnection,
    level: &str,
) -> (Vec<String>, Vec<String>) {
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{level}:records"))
        .query_async(admin)
        .await
        .unwrap();
    let timeline: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{level}:timeline"))
        .arg(0)
        .arg(-1)
        .query_async(admin)
        .await
        .unwrap();
    (fields, timeline)
}

/// The TTL of `key`, ms (-1: none, -2: no key).
async fn pttl(admin: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    redis::cmd("PTTL")
        .arg(key)
        .query_async(admin)
        .await
        .unwrap()
}

/// In Redis, records past the retention leave the server: after a short retention the next
/// call finds the records hash and the timeline holding only the live reservation's record;
/// while it is live nothing of the SKU has a TTL, and once it is settled the records and the
/// timeline of the idle SKU expire (TTL at most the retention and a sixteenth) while its level
/// stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_past_the_retention_leave_redis() {
    let Some(url) = redis_url() else {
        return;
    };
    let retention = Duration::from_secs(2);
    let backend = RedisBackend::connect(&url).await.unwrap();
    let (stock, store) = stock_with(&backend, retention);
    let mut admin = admin_connection(&url).await;
    let sku = unique("leaves");
    let level = store.redis_key(&format!("test:{sku}"));
    timeout(BOUND, async {
        stock.restock(&sku, 30, "delivery-1").await.unwrap();
        for n in 0..20 {
            stock.deduct(&sku, 1, &format!("o-{n}")).await.unwrap();
        }
        stock.deduct(&sku, 100, "too-many").await.unwrap();
        stock
            .reserve(&sku, 1, "r-live", Duration::from_secs(3600))
            .await
            .unwrap();
        let (fields, timeline) = records_and_timeline(&mut admin, &level).await;
        // The restock's record, 21 orders' and the live reservation's (not in the timeline).
        assert_eq!(
            (fields.len(), timeline.len()),
            (23, 22),
            "{fields:?} {timeline:?}"
        );
        for key in [format!("{level}:records"), format!("{level}:timeline")] {
            assert_eq!(
                pttl(&mut admin, &key).await,
                -1,
                "{key} expires under a live reservation"
            );
        }
        // Past the retention, any call forgets them (the server's clock decides when).
        crate::conformance::eventually("the records past the retention are forgotten", || {
            let (stock, sku, mut admin, level) =
                (stock.clone(), sku.clone(), admin.clone(), level.clone());
            async move {
                stock.level(&sku).await.unwrap();
                records_and_timeline(&mut admin, &level).await
                    == (vec!["r|r-live".to_owned()], Vec::new())
            }
        })
        .await;
        assert_eq!(
            stock.confirm(&sku, "r-live").await.unwrap(),
            ConfirmOutcome::Confirmed
        );
        // The retention, and at most a sixteenth more (set that much ahead).
        let keep = i64::try_from(retention.as_millis()).unwrap();
        for key in [format!("{level}:records"), format!("{level}:timeline")] {
            let ttl = pttl(&mut admin, &key).await;
            assert!(0 < ttl && ttl <= keep + keep / 16, "{key}: TTL {ttl} ms");
        }
        // Nobody names the SKU any more: Redis expires its records; its level stays.
        crate::conformance::eventually("the idle SKU's records expire", || {
            let (mut admin, level) = (admin.clone(), level.clone());
            async move {
                let records = format!("{level}:records");
                pttl(&mut admin, &records).await == -2
            }
        })
        .await;
        assert_eq!(pttl(&mut admin, &level).await, -1);
        let audit = stock.audit(&sku).await.unwrap();
        assert_eq!((audit.sold, audit.available), (21, 9));
    })
    .await
    .expect("bounded");
}

/// Orders the memory test sends, all distinct, on one SKU.
const MILLION: u64 = 1_000_000;
/// The most orders per second the memory test sends (it paces itself to this).
const PACE_PER_SECOND: u64 = 100_000;
/// Orders per script call in the memory test.
const BATCH: u64 = 1_000;
/// Script calls in flight at once in the memory test.
const IN_FLIGHT: u64 = 2;
/// The memory test's retention.
const MEMORY_TEST_RETENTION: Duration = Duration::from_secs(1);
/// What the memory test allows Redis's used memory to grow by.
const MEMORY_BOUND: i64 = 32 * 1024 * 1024;

/// Redis's `used_memory`, bytes.
async fn used_memory(admin: &mut redis::aio::MultiplexedConnection) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(admin)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// 1,000,000 distinct orders on one SKU of a Redis of the test's own with a 1 s retention, at
/// most `PACE_PER_SECOND` a second (script calls of `BATCH` orders, each order run by the
/// deduction's own code as a request of its own, `IN_FLIGHT` calls at a time): Redis's used
/// memory, sampled every 250 ms while they run and at the end, grows by at most `MEMORY_BOUND`
/// (32 MiB) above what it held before them. At the pace's most, a retention holds 100,000
/// records of about 100 bytes, 10 MB; kept for good, the million take about 90 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_orders_stay_within_the_memory_bound() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(unique("stock-memory"));
    let server = lock_testing::RedisServer::start(lock_testing::free_port(), dir);
    // A script call of `BATCH` orders may wait for others on a busy machine.
    let backend = RedisBackend::builder(server.url())
        .response_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    let store = RedisStock::from_backend(&backend)
        .with_retention(MEMORY_TEST_RETENTION)
        .unwrap();
    let stock = Stock::builder(store.clone())
        .namespace("memory")
        .build()
        .unwrap();
    let mut admin = admin_connection(&server.url()).await;
    admin.set_response_timeout(Duration::from_secs(20));
    let sku = "one-sku";
    stock.restock(sku, 1_000, "delivery-1").await.unwrap();
    let before = used_memory(&mut admin).await;
    let started = tokio::time::Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let run = async {
        let senders: Vec<_> = (0..IN_FLIGHT)
            .map(|_| {
                let (store, next) = (store.clone(), next.clone());
                tokio::spawn(async move {
                    loop {
                        let first = next.fetch_add(BATCH, std::sync::atomic::Ordering::Relaxed);
                        if first >= MILLION {
                            return;
                        }
                        let due =
                            started + Duration::from_micros(first * 1_000_000 / PACE_PER_SECOND);
                        tokio::time::sleep_until(due).await;
                        let last = (first + BATCH).min(MILLION) - 1;
                        store
                            .deduct_numbered("memory:one-sku", 1, "order-", first, last)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        let mut peak = 0;
        let mut sampler = tokio::time::interval(Duration::from_millis(250));
        while !senders.iter().all(tokio::task::JoinHandle::is_finished) {
            sampler.tick().await;
            peak = peak.max(used_memory(&mut admin).await - before);
        }
        for sender in senders {
            sender.await.unwrap();
        }
        peak.max(used_memory(&mut admin).await - before)
    };
    let peak = timeout(Duration::from_secs(60), run)
        .await
        .expect("bounded");
    let level = stock.audit(sku).await.unwrap();
    let (records, _) = records_and_timeline(&mut admin, &store.redis_key("memory:one-sku")).await;
    eprintln!(
        "{MILLION} orders in {:.1} s: used memory grew at most {:.1} MiB; {} records kept at the \
         end; {level:?}",
        started.elapsed().as_secs_f64(),
        peak as f64 / (1024.0 * 1024.0),
        records.len()
    );
    assert_eq!((level.sold, level.available), (1_000, 0));
    assert!(
        peak <= MEMORY_BOUND,
        "used memory grew {peak} bytes, over the bound of {MEMORY_BOUND}"
    );
}

/// Writes `fields` into the hash `key`.
async fn hset(admin: &mut redis::aio::MultiplexedConnection, key: &str, fields: &[(&str, &str)]) {
    let mut command = redis::cmd("HSET");
    command.arg(key);
    for (field, value) in fields {
        command.arg(*field).arg(*value);
    }
    let _: i64 = command.query_async(admin).await.unwrap();
}

/// Stock kept in the layout before key prefixes (`stock:{#ns:sku}` and its `:deductions`,
/// `:reservations`, `:expiry`, written here by hand as lock-core 0.1 wrote them) is carried
/// over by `migrate_unprefixed`, on a server of the test's own: the level, and a live
/// reservation that can still be confirmed; a deduction's record is not (the same order id is
/// new); a never-restocked SKU's records are dropped; a SKU the store already has is left as
/// it was and named; nothing of the old layout is left but that one, and a second run carries
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_of_the_unprefixed_layout_is_carried_over() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(unique("stock-migrate"));
    let server = lock_testing::RedisServer::start(lock_testing::free_port(), dir);
    let backend = RedisBackend::builder(server.url())
        .key_prefix("shop")
        .connect()
        .await
        .unwrap();
    let (stock, store) = stock_with(&backend, Duration::from_secs(3600));
    let mut admin = admin_connection(&server.url()).await;
    timeout(BOUND, async {
        let old = "stock:{#test:kept}";
        let until = (std::time::SystemTime::now() + Duration::from_secs(3600))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string();
        let level = [
            ("available", "3"),
            ("reserved", "1"),
            ("sold", "1"),
            ("received", "5"),
        ];
        hset(&mut admin, old, &level).await;
        hset(
            &mut admin,
            &format!("{old}:deductions"),
            &[("o-1", "D|1|4")],
        )
        .await;
        let reservations = [("r-1", "L|1|3"), ("r-0", "X|1|4")];
        hset(&mut admin, &format!("{old}:reservations"), &reservations).await;
        let _: i64 = redis::cmd("ZADD")
            .arg(format!("{old}:expiry"))
            .arg(&until)
            .arg("r-1")
            .query_async(&mut admin)
            .await
            .unwrap();
        hset(
            &mut admin,
            "stock:{#test:ghost}:deductions",
            &[("o-9", "O|1|0")],
        )
        .await;
        // A SKU both layouts have: left alone.
        hset(&mut admin, "stock:{#test:both}", &level).await;
        stock.restock("both", 1, "delivery-1").await.unwrap();

        let moved = store.migrate_unprefixed().await.unwrap();
        assert_eq!(
            (moved.carried, moved.dropped, moved.conflicts.clone()),
            (1, 1, vec!["test:both".to_owned()]),
            "{moved:?}"
        );
        let level = stock.audit("kept").await.unwrap();
        assert_eq!(
            (level.available, level.reserved, level.sold, level.received),
            (3, 1, 1, 5)
        );
        assert_eq!(
            stock.confirm("kept", "r-1").await.unwrap(),
            ConfirmOutcome::Confirmed
        );
        assert!(!stock.deduct("kept", 1, "o-1").await.unwrap().duplicate);
        let level = stock.audit("kept").await.unwrap();
        assert_eq!((level.available, level.sold), (2, 3));
        assert!(level.is_balanced());
        assert_eq!(stock.audit("both").await.unwrap().received, 1);

        let left = keys_naming(&mut admin, "stock:{#").await;
        let unprefixed: Vec<&String> = left.iter().filter(|k| k.starts_with("stock:")).collect();
        assert_eq!(unprefixed, ["stock:{#test:both}"], "{left:?}");
        let again = store.migrate_unprefixed().await.unwrap();
        assert_eq!((again.carried, again.dropped), (0, 0), "{again:?}");
    })
    .await
    .expect("bounded");
}
