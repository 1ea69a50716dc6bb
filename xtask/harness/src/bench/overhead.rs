//! The same locked work written with `#[distributed_lock]` and by hand, for measuring what
//! the macro costs.

use std::time::Duration;

use lock_core::{distributed_lock, LockClient, LockError, LostReason, WaitPolicy};

/// The macro: lock `bench:job:{id}` (watchdog lease, wait forever, cancel on loss), fence bound.
#[distributed_lock(key = "job:{id}", name = "bench", client = locks, fence = fence)]
pub async fn annotated(locks: &LockClient, id: u64) -> Result<u64, LockError> {
    Ok(fence.get() ^ id)
}

/// The same lock calls by hand, with the same semantics.
pub async fn by_hand(locks: &LockClient, id: u64) -> Result<u64, LockError> {
    let key = format!("bench:job:{id}");
    let Some(guard) = locks
        .lock(key.as_str())
        .acquire_with(WaitPolicy::Forever)
        .await?
    else {
        return Err(LockError::Busy {
            key,
            waited: Duration::ZERO,
        });
    };
    let fence = guard.fencing_token().get();
    let lost = guard.lost();
    let output = tokio::select! {
        biased;
        reason = lost => {
            let _released = guard.release().await;
            return Err(LockError::LeaseLost { key, reason });
        }
        output = async { Ok(fence ^ id) } => output,
    };
    if let Err(lost) = guard.ensure_held() {
        let _released = guard.release().await;
        return Err(lost);
    }
    match guard.release().await {
        Ok(false) => Err(LockError::LeaseLost {
            key,
            reason: LostReason::NotOwner,
        }),
        Ok(true) | Err(_) => output,
    }
}
