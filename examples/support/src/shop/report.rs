//! The shop's scheduled job: a stock report every `--report-every-ms`, run by one instance
//! per slot however many instances serve the shop ([`LockClient::run_once`]).
//!
//! Every instance's scheduler fires at each slot boundary of the wall clock (slot `n` starts
//! at `n × period` since the Unix epoch), so the instances fire together give or take their
//! scheduling; the first to take the key `stock-report` runs the job and holds the key for
//! at least three quarters of the period, so the others, firing a little later, skip. Each
//! run prints one line:
//!
//! ```text
//! stock report: slot=3528901234 instance=b fence=1764286120004512 available=97
//! ```
//!
//! `cargo xtask demo leader` runs three instances and checks one line per slot.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Shop;

/// The job's key: one for every slot, so its fencing token grows run after run.
pub const REPORT_KEY: &str = "stock-report";

/// The shortest period: the key is held for at least three quarters of it, which must be a
/// lease ([`lock_core::lease::MIN_LEASE_TTL`]) with room to spare.
const MIN_PERIOD: Duration = Duration::from_millis(100);

/// Checks a report period (`--report-every-ms`).
///
/// # Errors
/// A message when it is shorter than 100 ms or longer than a day.
pub fn check_period(every: Duration) -> Result<(), String> {
    if every < MIN_PERIOD || every > Duration::from_secs(24 * 3600) {
        return Err(format!(
            "{} ms is outside 100..=86400000 ms",
            every.as_millis()
        ));
    }
    Ok(())
}

/// Starts the report's scheduler on this instance, in a task of its own, when the shop's
/// config asks for one (`--report-every-ms`).
pub fn spawn(shop: &Shop) {
    let Some(every) = shop.config().report_every else {
        return;
    };
    let shop = shop.clone();
    tokio::spawn(async move {
        loop {
            let (slot, until_next) = slot_now(every);
            tokio::time::sleep(until_next).await;
            let slot = slot + 1;
            run_slot(&shop, every, slot).await;
        }
    });
}

/// One firing: the report if this instance takes the slot.
async fn run_slot(shop: &Shop, every: Duration, slot: u64) {
    let (sku, instance) = (&shop.config().sku, &shop.config().instance);
    let ran = shop
        .locks()
        .run_once(REPORT_KEY)
        .at_least(every * 3 / 4)
        .at_most(every)
        .run(|fence| async move {
            let available = shop
                .level(sku)
                .await
                .map_or_else(|e| format!("unknown ({e})"), |l| l.available.to_string());
            println!(
                "stock report: slot={slot} instance={instance} fence={fence} available={available}"
            );
        })
        .await;
    if let Err(error) = ran {
        eprintln!("stock report: slot={slot} instance={instance} not run: {error}");
    }
}

/// The current slot of `every` and the time until the next one starts (wall clock).
fn slot_now(every: Duration) -> (u64, Duration) {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let period = every.as_nanos().max(1);
    let now = since_epoch.as_nanos();
    let slot = now / period;
    let next = (slot + 1) * period;
    let wait = u64::try_from(next - now).unwrap_or(u64::MAX);
    (
        u64::try_from(slot).unwrap_or(u64::MAX),
        Duration::from_nanos(wait),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_slot_is_within_one_period() {
        let every = Duration::from_millis(500);
        let (_, wait) = slot_now(every);
        assert!(wait <= every);
        assert!(check_period(Duration::from_millis(99)).is_err());
        assert!(check_period(every).is_ok());
    }
}
