//! The watchdog: keeps a lease alive (or, for fixed leases, keeps checking it) and fires the
//! lost signal the moment the lease can no longer be confirmed.
//!
//! Every `ttl / 3` it renews the lease (watchdog mode) or checks ownership (fixed mode). A
//! renewal that fails is retried with a short backoff while the lease still has time. The
//! signal fires when the backend says another owner holds the key, when the backend pushes a
//! loss, or when the trusted validity (`sent_at + ttl - drift`, on the monotonic clock) ends
//! without a confirmed renewal: before the server could hand the key to someone else, not after.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use crate::held::HeldLease;
use crate::lease::{renew_interval, valid_until};
use crate::LostReason;

/// The pause between two renewal attempts after a failure: short enough to get several tries
/// into the lease's last third, never longer than a second.
fn retry_backoff(ttl: Duration) -> Duration {
    (ttl / 15).clamp(Duration::from_millis(5), Duration::from_secs(1))
}

/// Starts the watchdog of `held`; it ends when `held.stop` is cancelled or the lease is lost.
pub(crate) fn spawn(held: Arc<HeldLease>, backend_loss: Option<crate::LossSignal>) {
    tokio::spawn(run(held, backend_loss));
}

async fn run(held: Arc<HeldLease>, backend_loss: Option<crate::LossSignal>) {
    let mut validity = held.valid_until.subscribe();
    let mut next_attempt = Instant::now() + renew_interval(held.mode().ttl());
    let mut last_error: Option<String> = None;
    let backend_lost = async {
        match &backend_loss {
            Some(signal) => signal.fired().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(backend_lost);

    loop {
        let until = *validity.borrow_and_update();
        let mode = held.mode();
        tokio::select! {
            biased;
            () = held.stop.cancelled() => return,
            reason = &mut backend_lost => return lose(&held, reason),
            () = sleep_until(until) => {
                return lose(&held, last_error.take().map_or(LostReason::Expired, LostReason::RenewalFailed));
            }
            changed = validity.changed() => {
                if changed.is_err() { return; }
                // Extended by hand: the next renewal counts from now.
                next_attempt = Instant::now() + renew_interval(held.mode().ttl());
                continue;
            }
            () = sleep_until(next_attempt) => {}
        }

        let sent = Instant::now();
        let ttl = mode.ttl();
        let outcome = tokio::select! {
            biased;
            () = held.stop.cancelled() => return,
            reason = &mut backend_lost => return lose(&held, reason),
            () = sleep_until(until) => {
                return lose(&held, last_error.take().map_or(LostReason::Expired, LostReason::RenewalFailed));
            }
            outcome = held.lease.renew(mode.is_renewed().then_some(ttl)) => outcome,
        };
        match outcome {
            Ok(true) => {
                last_error = None;
                next_attempt = sent + renew_interval(ttl);
                if mode.is_renewed() {
                    held.valid_until.send_replace(valid_until(sent, ttl));
                    validity.borrow_and_update();
                }
                tracing::trace!(key = %held.key, renewed = mode.is_renewed(), "lease confirmed");
            }
            Ok(false) => return lose(&held, LostReason::NotOwner),
            Err(error) => {
                tracing::warn!(key = %held.key, %error, "lease renewal failed; retrying while the lease lasts");
                last_error = Some(error.to_string());
                next_attempt = Instant::now() + retry_backoff(ttl);
            }
        }
    }
}

fn lose(held: &HeldLease, reason: LostReason) {
    if held.loss.fire(reason.clone()) {
        tracing::warn!(key = %held.key, fence = %held.fence, backend = held.backend, %reason, "lease lost");
    }
}
