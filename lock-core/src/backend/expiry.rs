//! A lease's TTL, kept by the holder's own process.
//!
//! ZooKeeper's ephemeral nodes live as long as their session, and etcd's leases have TTLs of
//! whole seconds that the server raises to its minimum (about 2 s). So that a lease still ends
//! at its own TTL when its holder stops renewing (a stuck task, an abandoned guard, a fixed lease
//! held too long), those backends run one timer per lease that deletes the node / revokes the
//! lease when the TTL passes without a renewal. If the whole process dies, the server frees it
//! instead (after the session timeout, or the rounded-up lease TTL).

use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// When a lease ends, and whether it already has.
#[derive(Debug)]
pub(crate) struct Expiry {
    state: Mutex<State>,
    changed: Notify,
    done: CancellationToken,
}

#[derive(Debug)]
struct State {
    at: Instant,
    ended: bool,
}

impl Expiry {
    /// A lease that ends at `at` unless extended.
    pub(crate) fn new(at: Instant) -> Self {
        Self {
            state: Mutex::new(State { at, ended: false }),
            changed: Notify::new(),
            done: CancellationToken::new(),
        }
    }

    /// Moves the end to `at`; false when the lease has already ended.
    pub(crate) fn extend(&self, at: Instant) -> bool {
        let mut state = lock(&self.state);
        if state.ended {
            return false;
        }
        state.at = at;
        drop(state);
        self.changed.notify_one();
        true
    }

    /// Ends the lease now (released, or lost); false when it had already ended.
    pub(crate) fn end(&self) -> bool {
        let was_running = !std::mem::replace(&mut lock(&self.state).ended, true);
        self.changed.notify_one();
        self.done.cancel();
        was_running
    }

    /// True once ended.
    pub(crate) fn is_ended(&self) -> bool {
        lock(&self.state).ended
    }

    /// Resolves once the lease has ended, in any way.
    pub(crate) async fn ended(&self) {
        self.done.cancelled().await;
    }

    /// Waits until the lease runs out without an extension, and ends it: `true`. Returns
    /// `false` as soon as it is ended another way.
    pub(crate) async fn run_out(&self) -> bool {
        loop {
            let at = {
                let mut state = lock(&self.state);
                if state.ended {
                    return false;
                }
                if Instant::now() >= state.at {
                    state.ended = true;
                    self.done.cancel();
                    return true;
                }
                state.at
            };
            tokio::select! {
                () = sleep_until(at) => {}
                () = self.changed.notified() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runs_out_unless_extended_or_ended() {
        let start = Instant::now();
        let expiry = Arc::new(Expiry::new(start + Duration::from_secs(1)));
        let timer = tokio::spawn({
            let expiry = expiry.clone();
            async move { expiry.run_out().await }
        });
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert!(expiry.extend(Instant::now() + Duration::from_secs(1)));
        assert!(timer.await.unwrap());
        assert!(start.elapsed() >= Duration::from_millis(1900));
        assert!(!expiry.extend(Instant::now() + Duration::from_secs(1)));
        assert!(!expiry.end(), "already ended by the timer");

        let released = Arc::new(Expiry::new(Instant::now() + Duration::from_secs(1)));
        assert!(released.end());
        assert!(!released.run_out().await);
        assert!(released.is_ended());
    }
}
