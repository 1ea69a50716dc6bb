//! A set-once flag that tasks can wait on, kept inline in the state it belongs to: a held
//! lease's "stop renewing" and the lost signal. (`tokio_util`'s `CancellationToken` would do
//! the same, at the cost of an allocation of its own per lease.)

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Set once, never cleared; [`cancelled`](Self::cancelled) resolves once it is set.
#[derive(Debug, Default)]
pub(crate) struct StopFlag {
    set: AtomicBool,
    notify: Notify,
}

impl StopFlag {
    /// Sets the flag and wakes every task waiting on it.
    pub(crate) fn cancel(&self) {
        self.set.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// True once set.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Resolves once the flag is set (at once if it already is).
    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so a `cancel` between the two still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn wakes_a_waiter_and_answers_at_once_afterwards() {
        let flag = Arc::new(StopFlag::default());
        let waiter = tokio::spawn({
            let flag = flag.clone();
            async move { flag.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!flag.is_cancelled());
        flag.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("waiter");
        assert!(flag.is_cancelled());
        tokio::time::timeout(Duration::from_secs(5), flag.cancelled())
            .await
            .expect("already set");
    }
}
