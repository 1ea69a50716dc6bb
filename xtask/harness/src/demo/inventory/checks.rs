//! The flash-sale checks the example apps' tests share: exactly N sold over HTTP, retried
//! order ids, reservation expiry, and a Redis that dies mid-run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use example_support::backend::BackendKind;
use example_support::shop::Strategy;
use tokio::time::timeout;

use crate::demo::inventory::test_redis::TestRedis;
use crate::demo::inventory::{fetch_level, unique, Instance, Outcome, Scenario};
use crate::demo::scrape::assert_page_after;
use crate::shared::load::{self, classify, Load, Progress, ReplyKind, Report};

/// How long any one scenario may take.
pub const LIMIT: Duration = Duration::from_secs(120);

/// `buyers` concurrent buyers against `targets` for `stock` units of `sku` already seeded:
/// exactly `min(stock, buyers)` answered 200 and recorded, the store balances, and retrying
/// sold orders answers the first sale again without deducting twice.
pub async fn sells_exactly(
    targets: Vec<String>,
    sku: &str,
    stock: u64,
    buyers: u64,
) -> Result<(), String> {
    let run = unique("buyers");
    let load = Load {
        targets: targets.clone(),
        sku: sku.to_owned(),
        buyers,
        concurrency: 256,
        run,
        progress: false,
    };
    let report = timeout(LIMIT, load::fire(&load, Arc::new(Progress::default())))
        .await
        .map_err(|_| "the load did not finish in time")?;
    let level = fetch_level(&targets[0], sku).await?.0;
    let scenario = Scenario {
        strategy: Strategy::Atomic,
        backend: BackendKind::Memory,
        redis_url: String::new(),
        apps: Vec::new(),
        instances: targets.len(),
        buyers,
        stock,
        concurrency: load.concurrency,
        progress: false,
    };
    let sold_orders = report.sold_orders.clone();
    let outcome = Outcome {
        scenario,
        report,
        level,
        retried: None,
    };
    outcome.check()?;
    if outcome.report.errors + outcome.report.busy != 0 {
        return Err(format!(
            "unexpected failures: {:?}",
            outcome.report.statuses
        ));
    }
    for order in sold_orders.iter().take(20) {
        let reply = load::send(
            &load::client(1),
            "POST",
            &targets[0],
            &format!("/buy/{sku}"),
            Some(order),
        )
        .await;
        if classify(reply.status, &reply.body).0 != (ReplyKind::Sold { duplicate: true }) {
            return Err(format!(
                "retried order {order}: {} {}",
                reply.status, reply.body
            ));
        }
    }
    let after = fetch_level(&targets[0], sku).await?.0;
    if after != level {
        return Err(format!("retries changed the stock: {level:?} → {after:?}"));
    }
    Ok(())
}

/// On an app selling from the stock primitive (`atomic` or `reserve`) with `sku` seeded with
/// 2 units: a reservation that expires returns its unit, and confirming it afterwards is
/// refused; a live one confirms.
pub async fn reservations_expire(base: &str, sku: &str) -> Result<(), String> {
    let client = load::client(1);
    let post = |path: String, order: &'static str| {
        let client = client.clone();
        async move { load::send(&client, "POST", base, &path, Some(order)).await }
    };
    let short = post(format!("/reservations/{sku}?ttl_ms=200"), "r-short").await;
    let kept = post(format!("/reservations/{sku}?ttl_ms=60000"), "r-kept").await;
    if short.status != 200 || kept.status != 200 {
        return Err(format!("reserving: {short:?} {kept:?}"));
    }
    let level = fetch_level(base, sku).await?.0;
    if (level.available, level.reserved) != (0, 2) {
        return Err(format!("after reserving: {level:?}"));
    }
    // The expiry itself is what is tested: let the short reservation's TTL pass.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let level = fetch_level(base, sku).await?.0;
    if (level.available, level.reserved) != (1, 1) {
        return Err(format!(
            "the expired reservation did not return its unit: {level:?}"
        ));
    }
    let late = post(format!("/reservations/{sku}/confirm"), "r-short").await;
    if late.status != 409 || !late.body.contains("expired") {
        return Err(format!("confirm after expiry was not refused: {late:?}"));
    }
    let confirmed = post(format!("/reservations/{sku}/confirm"), "r-kept").await;
    if confirmed.status != 200 {
        return Err(format!("confirming a live reservation: {confirmed:?}"));
    }
    let level = fetch_level(base, sku).await?.0;
    if (level.available, level.reserved, level.sold) != (1, 0, 1) || !level.is_balanced() {
        return Err(format!("after confirming: {level:?}"));
    }
    Ok(())
}

fn scenario(strategy: Strategy, redis_url: String, apps: Vec<PathBuf>, stock: u64) -> Scenario {
    Scenario {
        strategy,
        backend: BackendKind::Redis,
        redis_url,
        apps,
        instances: 2,
        buyers: 1_000,
        stock,
        concurrency: 64,
        progress: false,
    }
}

/// Two app processes on the Redis at `redis_url` sell exactly `stock` units to 1,000 buyers.
pub async fn redis_sells_exactly(
    strategy: Strategy,
    redis_url: String,
    apps: Vec<PathBuf>,
) -> Result<(), String> {
    let mut scenario = scenario(strategy, redis_url, apps, 100);
    scenario.concurrency = 256;
    let outcome = timeout(LIMIT, scenario.run())
        .await
        .map_err(|_| "timed out")??;
    outcome.check()?;
    if outcome.report.errors != 0 {
        return Err(format!(
            "unexpected failures: {:?}",
            outcome.report.error_samples
        ));
    }
    Ok(())
}

/// Two app processes sell while their Redis is killed and restarted: every failure answers
/// 503, every 200 is a recorded sale (retrying it answers the same sale), nothing is
/// oversold, and after the restart the rest of the stock sells.
pub async fn redis_dropped_mid_run(
    strategy: Strategy,
    apps: Vec<PathBuf>,
    data: PathBuf,
) -> Result<(), String> {
    let mut redis = TestRedis::start(data)?;
    let stock = 300;
    let scenario = scenario(strategy, redis.url(), apps.clone(), stock);
    let namespace = unique(&format!("drop-{}", strategy.name()));
    let sku = "drop-sku";
    let mut instances = Vec::new();
    for index in 0..2 {
        let mut args = scenario.app_args(&namespace, sku, index);
        // Unconfirmed reservations of failed requests come back soon, for the second phase.
        args.extend(["--reservation-ms".into(), "1000".into()]);
        instances.push(Instance::launch(&apps[index % apps.len()], &args).await?);
    }
    let targets: Vec<String> = instances.iter().map(|i| i.base.clone()).collect();
    let progress = Arc::new(Progress::default());
    let load = Load {
        targets: targets.clone(),
        sku: sku.into(),
        buyers: 1_000,
        concurrency: 64,
        run: format!("{namespace}-a"),
        progress: false,
    };
    let firing = load::fire(&load, progress.clone());
    let chaos = async {
        progress.wait_for(|p| p.done() >= 100).await;
        redis.kill();
        progress
            .wait_for(|p| p.failed() >= 20 || p.done() >= load.buyers)
            .await;
        redis.restart()
    };
    let (first, restarted) = timeout(LIMIT, async { tokio::join!(firing, chaos) })
        .await
        .map_err(|_| "the first phase did not finish in time")?;
    restarted?;
    if first.errors == 0 {
        return Err("the outage produced no failures; it did not test anything".into());
    }
    check_statuses(&first)?;
    eprintln!(
        "{}: during the outage: {:?} (status: count); first failure: {:?}",
        strategy.name(),
        first.statuses,
        first.error_samples.first()
    );

    // Second phase, Redis back: more buyers than units, so the rest must sell.
    tokio::time::sleep(Duration::from_millis(1_100)).await; // reservations of phase one expire
    let second = Load {
        run: format!("{namespace}-b"),
        ..load.clone()
    };
    let second = timeout(LIMIT, load::fire(&second, Arc::new(Progress::default())))
        .await
        .map_err(|_| "the second phase did not finish in time")?;
    check_statuses(&second)?;

    // Every 200 was a recorded sale: retrying it answers the same sale. Failed orders are
    // settled by retrying them too (their sale may or may not have been recorded).
    let client = load::client(4);
    let mut sold: BTreeSet<String> = first
        .sold_orders
        .iter()
        .chain(&second.sold_orders)
        .cloned()
        .collect();
    let path = format!("/buy/{sku}");
    let buy_again =
        async |order: &str| load::send(&client, "POST", &targets[0], &path, Some(order)).await;
    for order in &sold {
        let reply = buy_again(order).await;
        if reply.status != 200 {
            return Err(format!(
                "sold order {order} is not recorded: {} {}",
                reply.status, reply.body
            ));
        }
    }
    for order in first.failed_orders.iter().chain(&second.failed_orders) {
        let reply = buy_again(order).await;
        match reply.status {
            200 => {
                sold.insert(order.clone());
            }
            409 => {}
            _ => {
                return Err(format!(
                    "retrying {order} after recovery: {} {}",
                    reply.status, reply.body
                ))
            }
        }
    }
    let level = fetch_level(&targets[0], sku).await?.0;
    if level.sold != sold.len() as u64 || level.sold > stock || !level.is_balanced() {
        return Err(format!(
            "{} orders answered sold, store says {level:?} of {stock}",
            sold.len()
        ));
    }
    if level.sold + level.reserved != stock {
        return Err(format!("undersold after recovery: {level:?}"));
    }
    Ok(())
}

/// Only 200, 409 (out of stock / busy) and 503 (with a problem body) may be answered.
fn check_statuses(report: &Report) -> Result<(), String> {
    for status in report.statuses.keys() {
        if ![200, 409, 503].contains(status) {
            return Err(format!(
                "answered {status}: {:?} {:?}",
                report.statuses, report.error_samples
            ));
        }
    }
    Ok(())
}

/// The app at `base` (on memory, lock strategy, `sku-m` stocked) after one purchase: the
/// lock's acquisition and the keyed-lock layer's answer are on `GET /metrics`. Panics
/// otherwise (a test's body).
pub async fn metrics_show_the_locked_purchase(base: &str) {
    let bought = async {
        let bought = load::send(
            &load::client(1),
            "POST",
            base,
            "/buy/sku-m",
            Some("order-m"),
        )
        .await;
        (bought.status, bought.body)
    };
    assert_page_after(
        base,
        bought,
        200,
        &[
            (
                "lock_acquire_total",
                &[("backend", "memory"), ("outcome", "acquired")],
            ),
            (
                "lock_http_responses_total",
                &[("layer", "keyed_lock"), ("outcome", "ran")],
            ),
        ],
    )
    .await;
}
