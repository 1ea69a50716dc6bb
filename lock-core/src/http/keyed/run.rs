//! Acquire, run the handler racing the lost signal, release: the sequence every adapter calls.

use std::future::Future;

use tokio::time::Instant;

use super::{KeyedLockOptions, OnLost};
use crate::http::Rejection;
use crate::{race_lost, FencingToken, LockClient, LockError, LockGuard, LockOwner};

/// What the handler learns about the lock it runs under; the adapters put it in the request
/// (lock-tower: request extensions, lock-actix: an extractor).
///
/// ```
/// use lock_core::http::keyed::LockInfo;
/// use lock_core::FencingToken;
///
/// let info = LockInfo::new("sku:1", FencingToken::new(7));
/// assert_eq!((info.key.as_str(), info.fencing_token.get()), ("sku:1", 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockInfo {
    /// The lock key (with the options' prefix, without the client's namespace).
    pub key: String,
    /// The fencing token of this grant: pass it to the resource with every write.
    pub fencing_token: FencingToken,
    /// When the lock was granted, for measuring how long it is held.
    pub acquired_at: std::time::Instant,
}

impl LockInfo {
    /// Info for a lock granted now (adapters and tests build it; middleware fills it in).
    #[must_use]
    pub fn new(key: impl Into<String>, fence: FencingToken) -> Self {
        Self {
            key: key.into(),
            fencing_token: fence,
            acquired_at: std::time::Instant::now(),
        }
    }
}

/// Runs `inner` under the lock `options.lock_key(key)`, or says why not.
///
/// Each call is its own lock owner, so two requests served by the same task never share a
/// lock by reentrancy. `inner` gets the [`LockInfo`]; with [`OnLost::Cancel`] its future is
/// dropped as soon as the lease is lost and the answer is a 503 rejection. The lock is
/// released (owner-checked) after `inner` finishes; a failed release is logged, not reported,
/// since the work is done and the lease's TTL frees the lock anyway. `status_of` reads the
/// status the handler answered with from its output, for
/// [`HTTP_RESPONSES_TOTAL`](crate::metrics::HTTP_RESPONSES_TOTAL) (`None` when it
/// failed instead of answering: counted as
/// [`NO_STATUS`](crate::metrics::NO_STATUS)).
///
/// This is [`RequestLock::acquire`] followed by [`RequestLock::run`], for adapters that can
/// hand their request to the closure.
///
/// ```
/// use lock_core::http::keyed::{run_locked, KeyedLockOptions};
/// use lock_core::http::RejectionKind;
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let locks = LockClient::new(MemoryBackend::new());
/// let options = KeyedLockOptions::new(); // reject at once when busy
/// let held = locks.lock("sku:1").await.unwrap();
/// let busy = run_locked(&locks, "sku:1", &options, |_| async { "sold" }, |_| Some(200)).await;
/// assert_eq!(busy.unwrap_err().kind, RejectionKind::Busy);
/// held.release().await.unwrap();
/// // A handler's output as an adapter has it: a response, or the error of a failed handler.
/// let sold = |info: lock_core::http::keyed::LockInfo| async move { Ok::<_, ()>(info.fencing_token.get()) };
/// let status_of = |output: &Result<u64, ()>| output.is_ok().then_some(201);
/// let done = run_locked(&locks, "sku:1", &options, sold, status_of).await;
/// assert_eq!(done.unwrap(), Ok(2));
/// # }
/// ```
pub async fn run_locked<F, Fut>(
    client: &LockClient,
    key: &str,
    options: &KeyedLockOptions,
    inner: F,
    status_of: impl FnOnce(&Fut::Output) -> Option<u16>,
) -> Result<Fut::Output, Rejection>
where
    F: FnOnce(LockInfo) -> Fut,
    Fut: Future,
{
    let lock = RequestLock::acquire(client, key, options).await?;
    let work = inner(lock.info().clone());
    lock.run(work, options, status_of).await
}

/// A request's lock, held: the two halves of [`run_locked`], for adapters that must keep
/// their request until the lock is granted (to answer a rejection with it).
///
/// ```
/// use lock_core::http::keyed::{KeyedLockOptions, RequestLock};
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let locks = LockClient::new(MemoryBackend::new());
/// let options = KeyedLockOptions::new().key_prefix("sku:");
/// let lock = RequestLock::acquire(&locks, "1", &options).await.unwrap();
/// assert_eq!(lock.info().key, "sku:1");
/// let fence = lock.info().fencing_token;
/// let ran = lock.run(async move { fence.get() }, &options, |_| Some(200));
/// assert_eq!(ran.await.unwrap(), 1);
/// # }
/// ```
#[derive(Debug)]
#[must_use = "the lock is released when this is dropped"]
pub struct RequestLock {
    guard: LockGuard,
    info: LockInfo,
}

impl RequestLock {
    /// Takes the lock `options.lock_key(key)` for one request, as its own owner, waiting as
    /// `options` says; a busy key or a failed backend is the rejection to answer with.
    pub async fn acquire(
        client: &LockClient,
        key: &str,
        options: &KeyedLockOptions,
    ) -> Result<Self, Rejection> {
        let key = options.lock_key(key);
        let owner = LockOwner::new();
        let mut request = client.lock(key.as_str()).owner(&owner);
        if let Some(lease) = options.lease {
            request = request.lease(lease);
        }
        let started = Instant::now();
        let acquired = match request.acquire_with(options.wait).await {
            Ok(Some(guard)) => Ok(Self {
                info: LockInfo::new(key, guard.fencing_token()),
                guard,
            }),
            Ok(None) => Err(Rejection::busy(&key, started.elapsed(), options)),
            Err(error) => {
                if error.is_invalid_input() && !matches!(error, LockError::InvalidKey { .. }) {
                    tracing::error!(%error, "keyed-lock middleware is misconfigured");
                } else {
                    tracing::debug!(%error, key, "keyed lock not acquired");
                }
                Err(Rejection::from_error(&error, options))
            }
        };
        if let Err(rejection) = &acquired {
            rejection.record_keyed_lock();
        }
        acquired
    }

    /// The key and fencing token, for the handler.
    #[must_use]
    pub fn info(&self) -> &LockInfo {
        &self.info
    }

    /// Runs `work` under the lock (racing the lost signal as `options.on_lost` says), then
    /// releases it. `status_of` reads the status the handler answered with from its output,
    /// as in [`run_locked`].
    pub async fn run<Fut: Future>(
        self,
        work: Fut,
        options: &KeyedLockOptions,
        status_of: impl FnOnce(&Fut::Output) -> Option<u16>,
    ) -> Result<Fut::Output, Rejection> {
        let Self { guard, info } = self;
        let outcome = match options.on_lost {
            OnLost::Cancel => race_lost(work, guard.lost()).await,
            OnLost::Continue => Ok(work.await),
        };
        let (key, fence) = (info.key, info.fencing_token);
        if outcome.is_ok() {
            // Released before answering, so the client's next request finds the key free.
            match guard.release().await {
                Ok(_) => {}
                // The backend's breaker reports an outage once.
                Err(error) if error.is_unavailable() => {
                    tracing::debug!(error = %error.with_causes(), key, %fence, "release after the handler failed; the TTL frees the lock");
                }
                Err(error) => {
                    tracing::warn!(error = %error.with_causes(), key, %fence, "release after the handler failed; the TTL frees the lock");
                }
            }
        } else {
            // Lost: answer at once; the owner-checked release goes on in the background (a
            // backend that is down would otherwise hold the 503 for its whole timeout).
            drop(guard);
        }
        match outcome {
            Ok(output) => {
                crate::http::metrics::http_response(
                    crate::http::metrics::LAYER_KEYED_LOCK,
                    status_of(&output),
                    "ran",
                );
                Ok(output)
            }
            Err(reason) => {
                tracing::warn!(key, %fence, %reason, "lease lost while the handler ran; cancelled it");
                let rejection =
                    Rejection::from_error(&LockError::LeaseLost { key, reason }, options);
                rejection.record_keyed_lock();
                Err(rejection)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::http::RejectionKind;
    use crate::MemoryBackend;

    #[tokio::test]
    async fn a_lost_lease_cancels_the_handler() {
        let backend = MemoryBackend::new();
        let locks = LockClient::new(backend.clone());
        let options = KeyedLockOptions::new().key_prefix("k:");
        let (entered_tx, entered_rx) = tokio::sync::oneshot::channel();
        let handler = |_| async move {
            entered_tx.send(()).ok();
            std::future::pending::<()>().await;
        };
        let run = run_locked(&locks, "1", &options, handler, |()| Some(200));
        let delete = async {
            entered_rx.await.unwrap();
            assert!(backend.simulate_external_delete("k:1"));
        };
        let (answer, ()) =
            tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(run, delete) })
                .await
                .unwrap();
        let rejection = answer.unwrap_err();
        assert_eq!(
            (rejection.kind, rejection.response.status),
            (RejectionKind::Lost, 503)
        );
    }

    #[tokio::test]
    async fn requests_in_one_task_exclude_each_other() {
        let locks = LockClient::new(MemoryBackend::new());
        let options = KeyedLockOptions::new();
        let outer = run_locked(
            &locks,
            "k",
            &options,
            |_| async { run_locked(&locks, "k", &options, |_| async {}, |()| Some(200)).await },
            |_| Some(200),
        );
        let inner = outer.await.unwrap();
        assert_eq!(inner.unwrap_err().kind, RejectionKind::Busy);
    }
}
