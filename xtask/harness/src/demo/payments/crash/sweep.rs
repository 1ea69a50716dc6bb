//! The kill -9 sweep across the handler's end (see the [module docs](super)).

use std::time::Duration;

use tokio::time::{sleep_until, timeout, Instant};

use super::verify::{KeyVerdict, Tally};
use super::CrashSetup;
use crate::demo::payments::checks::body;
use crate::demo::payments::client::{client, post_payment, PaymentClient, Posted};

/// The user every sweep payment belongs to.
const USER: &str = "sweeper";

/// How a sweep is shaped.
#[derive(Clone, Copy, Debug)]
pub struct Sweep {
    /// Rounds (a process killed per round; axum and actix-web in turn).
    pub rounds: usize,
    /// Payments per round, sent `spacing` apart.
    pub per_round: usize,
    /// Between two payments' sends.
    pub spacing: Duration,
}

impl Sweep {
    /// ≥ 100 attempts: 4 rounds of 30 payments, 0.5 ms apart.
    #[must_use]
    pub fn standard() -> Self {
        Self {
            rounds: 4,
            per_round: 30,
            spacing: Duration::from_micros(500),
        }
    }
}

/// Runs `sweep` on `setup`; the counts of every key.
pub async fn run(setup: &CrashSetup, sweep: Sweep) -> Result<Tally, String> {
    let bound = Duration::from_secs(30) + setup.lease * 4 * sweep.rounds as u32;
    timeout(bound, rounds(setup, sweep))
        .await
        .map_err(|_| format!("the sweep did not finish within {bound:?}"))?
}

async fn rounds(setup: &CrashSetup, sweep: Sweep) -> Result<Tally, String> {
    let ledger = setup.ledger().await?;
    let shared = setup.shared_args(&setup.redis_url, &setup.postgres_url);
    let with = |extra: &[&str]| -> Vec<String> {
        let extra = extra.iter().map(|s| (*s).to_owned());
        shared.iter().cloned().chain(extra).collect()
    };
    let handler_ms = setup.handler.as_millis().to_string();
    // One survivor per framework; a round's retries go to the other framework's.
    let survivors = [
        setup.apps[0].launch(&with(&["--handler-ms", "0"])).await?,
        setup.apps[1].launch(&with(&["--handler-ms", "0"])).await?,
    ];
    let client = client(sweep.per_round);
    let mut tally = Tally::default();
    for round in 0..sweep.rounds {
        let victim_app = &setup.apps[round % 2];
        let survivor = &survivors[(round + 1) % 2].base;
        let mut victim = victim_app
            .launch(&with(&["--handler-ms", &handler_ms, "--announce"]))
            .await?;
        warm_up(&client, sweep.per_round, &mut victim).await?;
        let keys: Vec<(String, String, u64)> = (0..sweep.per_round)
            .map(|i| {
                let key = format!("{}-r{round}-i{i}", setup.namespace);
                let payer = format!("payer-{key}");
                (key, payer, 100 + i as u64)
            })
            .collect();
        let start = Instant::now();
        let sends: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(i, (key, payer, cents))| {
                let (client, base) = (client.clone(), victim.base.clone());
                let (key, paid) = (key.clone(), body(payer, "shop", *cents));
                let at = start + sweep.spacing * i as u32;
                tokio::spawn(async move {
                    sleep_until(at).await;
                    post_payment(&client, &base, Some(USER), Some(&key), &paid).await
                })
            })
            .collect();
        // The kill follows the k-th payment's commit (its "paid" line), k moving through the
        // burst from round to round, plus a fraction of the spacing: the k-th payment is then
        // between its commit and its answer, and the others at every phase around it.
        let k = 1 + (sweep.per_round - 1) * (round + 1) / (sweep.rounds + 1);
        let mut commits = 0;
        while commits < k {
            let line = victim.next_line(Duration::from_secs(30)).await?;
            commits += usize::from(line.starts_with("paid "));
        }
        let shift = sweep.spacing * round as u32 / sweep.rounds as u32;
        tokio::time::sleep(shift).await;
        victim.kill().await?;
        let mut firsts = Vec::with_capacity(sends.len());
        for send in sends {
            firsts.push(send.await.map_err(|e| e.to_string())?);
        }
        for ((key, payer, cents), first) in keys.iter().zip(&firsts) {
            let paid = body(payer, "shop", *cents);
            let retry = answered(&client, survivor, key, &paid, setup.lease).await?;
            let verdict =
                KeyVerdict::of(&ledger, (USER, key), (payer, *cents), first, &retry).await?;
            if !verdict.is_right() {
                eprintln!("round {round}: {key}: {verdict:?}; first {first:?}; retry {retry:?}");
            }
            tally.add(&verdict);
        }
    }
    Ok(tally)
}

/// Opens the client's connections to the fresh process (`connections` at once) and its own
/// connections to its servers (one payment of a key of its own, answered), so the burst's
/// timing is the handlers', not connection set-up's.
async fn warm_up(
    client: &PaymentClient,
    connections: usize,
    victim: &mut crate::demo::payments::AppProcess,
) -> Result<(), String> {
    let base = victim.base.clone();
    let base = base.as_str();
    let stats = format!("{base}{}", example_support::payments::STATS_PATH);
    let opened: Vec<_> = (0..connections)
        .map(|_| {
            let (client, stats) = (client.clone(), stats.clone());
            tokio::spawn(async move { crate::demo::payments::get(&client, &stats).await })
        })
        .collect();
    for open in opened {
        open.await.map_err(|e| e.to_string())?;
    }
    let key = crate::demo::inventory::unique("warm-up");
    let paid = post_payment(client, base, Some(USER), Some(&key), &body("warm", "up", 1)).await;
    if paid.status != 201 {
        return Err(format!(
            "the warm-up payment failed: {} {}",
            paid.status, paid.body
        ));
    }
    // Its two announcements ("handling", "paid").
    for _ in 0..2 {
        victim.next_line(Duration::from_secs(30)).await?;
    }
    Ok(())
}

/// The key's retry on `base` until it is no longer in flight (409 while the dead claim's lease
/// lasts, as the protocol says; the client then retries after a moment).
pub(super) async fn answered(
    client: &PaymentClient,
    base: &str,
    key: &str,
    paid: &str,
    lease: Duration,
) -> Result<Posted, String> {
    let give_up = Instant::now() + lease * 10 + Duration::from_secs(10);
    loop {
        let retry = post_payment(client, base, Some(USER), Some(key), paid).await;
        if retry.status != 409 {
            return Ok(retry);
        }
        if Instant::now() > give_up {
            return Err(format!(
                "{key}: still 409 long after the lease of {lease:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The user the payments are made as.
#[must_use]
pub fn user() -> &'static str {
    USER
}
