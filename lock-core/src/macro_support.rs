//! What the code `#[distributed_lock]` expands to calls. Not a public API: it changes with the
//! macro, in any release. The logic lives here, as plain generic functions, so the expansion
//! stays a few lines long and costs nothing over the same lock calls written by hand.

use std::borrow::Borrow;
use std::future::Future;
use std::time::Duration;

use crate::{LeaseMode, LockClient, LockError, LostReason, WaitPolicy};

/// The attribute's settings, fixed at compile time.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The lease to ask for; `None` takes the client's default (a watchdog lease).
    pub lease: Option<LeaseMode>,
    /// How long to wait for a busy lock.
    pub wait: WaitPolicy,
    /// Drop the body's future and return [`LockError::LeaseLost`] when the lease is lost.
    pub cancel_on_lost: bool,
}

/// The client named by `client = <expr>`: anything that borrows as a [`LockClient`]
/// (`LockClient`, `Arc<LockClient>`, a reference to either, an actix `web::Data<LockClient>`
/// through auto-deref), cloned so the body may move what it was borrowed from. Called with
/// method syntax, so auto-deref also reaches a generic `&C` where `C: Borrow<LockClient>`.
pub trait ClientSource {
    /// A handle to the client (a cheap clone).
    fn __distributed_lock_client(&self) -> Result<LockClient, LockError>;
}

impl<T: Borrow<LockClient> + ?Sized> ClientSource for T {
    fn __distributed_lock_client(&self) -> Result<LockClient, LockError> {
        Ok(self.borrow().clone())
    }
}

/// `on_busy = "wait"` and `"reject"`: the busy error, converted into the fn's error type.
pub fn busy_error<T, E: From<LockError>>(busy: LockError) -> Result<T, E> {
    Err(E::from(busy))
}

/// `on_busy = "skip"`: the body does not run and the fn returns `Ok(T::default())`.
pub fn busy_skip<T: Default, E>(_busy: LockError) -> Result<T, E> {
    Ok(T::default())
}

/// Takes the lock `key` on `client`, runs `body` (given the fencing token) while holding it,
/// and releases it.
///
/// - Busy for the whole wait: `on_busy` decides (an error, or a skip value); `body` never runs.
/// - `cancel_on_lost`: `body` is polled in this task (so nested locks of the same task
///   re-enter) alongside the lost signal, which is polled first; when the lease is lost
///   before the body completes, the body's future is dropped, or its output discarded, and
///   the result is [`LockError::LeaseLost`].
/// - Otherwise the body always runs to completion and its output is returned as is.
///
/// A release that fails is logged by lock-core and left to the lease's TTL: it does not turn
/// a completed body into an error.
pub async fn run_locked<C, B, F, T, E, S>(
    client: Result<C, LockError>,
    key: String,
    options: Options,
    body: B,
    on_busy: S,
) -> Result<T, E>
where
    C: Borrow<LockClient>,
    B: FnOnce(u64) -> F,
    F: Future<Output = Result<T, E>>,
    E: From<LockError>,
    S: FnOnce(LockError) -> Result<T, E>,
{
    let client = client?;
    let mut request = client.borrow().lock(key.as_str());
    if let Some(lease) = options.lease {
        request = request.lease(lease);
    }
    let Some(guard) = request.acquire_with(options.wait).await? else {
        let waited = match options.wait {
            WaitPolicy::Within(wait) => wait,
            _ => Duration::ZERO,
        };
        return on_busy(LockError::Busy { key, waited });
    };
    let fence = guard.fencing_token().get();

    if !options.cancel_on_lost {
        let output = body(fence).await;
        let _released: Result<bool, LockError> = guard.release().await;
        return output;
    }

    let lost = guard.lost();
    let output = tokio::select! {
        biased;
        reason = lost => {
            let _released: Result<bool, LockError> = guard.release().await;
            return Err(E::from(LockError::LeaseLost { key, reason }));
        }
        output = body(fence) => output,
    };
    // The body finished, but a loss it raced with still means it ran unprotected.
    if let Err(lost) = guard.ensure_held() {
        let _released: Result<bool, LockError> = guard.release().await;
        return Err(E::from(lost));
    }
    match guard.release().await {
        // Gone from the backend before the watchdog noticed: deleted or taken over.
        Ok(false) => Err(E::from(LockError::LeaseLost {
            key,
            reason: LostReason::NotOwner,
        })),
        Ok(true) | Err(_) => output,
    }
}
