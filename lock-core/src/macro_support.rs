//! What the code `#[distributed_lock]` and `#[single_flight]` expand to calls. Not a public API: it changes with the
//! macro, in any release. The logic lives here, as plain generic functions, so the expansion
//! stays a few lines long and costs nothing over the same lock calls written by hand.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::time::Duration;

#[cfg(feature = "json")]
use crate::cache::CacheFailure;
use crate::{FencingToken, LeaseMode, LockClient, LockError, LostReason, WaitPolicy};

/// The attribute's settings, fixed at compile time.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The lease to ask for; `None` takes the client's default (a watchdog lease).
    pub lease: Option<LeaseMode>,
    /// How long to wait for a busy lock.
    pub wait: WaitPolicy,
    /// Drop the body's future and return [`LockError::LeaseLost`] when the lease is lost.
    pub cancel_on_lost: bool,
    /// Keep the key at least this long after the grant (`#[run_once(at_least = ...)]`): see
    /// [`LockGuard::release_after`](crate::LockGuard::release_after). Honoured with
    /// `cancel_on_lost: false`, which `#[run_once]` sets (a job is let finish).
    pub hold_at_least: Option<Duration>,
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

/// The key of a `key = "template"`: `literals` (the name prefix joined to the text before the
/// first placeholder, then the text after each placeholder) around `values`, encoded as
/// [`KeyTemplate`](crate::KeyTemplate) encodes them. The values come as `format_args!("{}",
/// value)`, so a value that is not `Display` gets the usual formatting error, on the template.
/// The attribute has already refused templates that cannot be injective. Like `format!`,
/// panics if a `Display` implementation fails.
pub fn template_key(literals: &[&str], values: &[fmt::Arguments<'_>]) -> String {
    let literal_len: usize = literals.iter().map(|l| l.len()).sum();
    let mut key = String::with_capacity(literal_len + 16 * values.len());
    if crate::lock::key_template::render_into(&mut key, literals, values).is_err() {
        panic!("a Display implementation returned an error unexpectedly");
    }
    key
}

/// The error type of a fn's `Result`, however the fn spells its return type (`Result<T, E>`,
/// `std::io::Result<T>`, an alias of its own): the expansion names
/// `<<R as FnResult>::Error as LockFnError>::from_lock_error` (or `FlightFnError`'s), on the
/// fn's return type, so an error type that cannot hold the macro's failures is reported
/// there, once, naming the user-facing trait.
pub trait FnResult {
    /// `E` of `Result<T, E>`.
    type Error;
}

impl<T, E> FnResult for Result<T, E> {
    type Error = E;
}

/// The fn's error for a lock failure, for a return type the expansion cannot name in an
/// expression (one with `impl Trait` inside): the bound is then reported here.
pub fn lock_failure<E: crate::LockFnError>(error: LockError) -> E {
    E::from_lock_error(error)
}

/// The fn's error for a cache failure, for a return type the expansion cannot name in an
/// expression (see [`lock_failure`]).
#[cfg(feature = "json")]
pub fn cache_failure<E: crate::cache::FlightFnError>(failure: CacheFailure) -> E {
    E::from_cache_failure(failure)
}

/// `on_busy = "wait"` and `"reject"`: the busy error, converted into the fn's error type.
pub fn busy_error<T, E>(busy: LockError, fail: fn(LockError) -> E) -> Result<T, E> {
    Err(fail(busy))
}

/// `on_busy = "skip"`: the body does not run and the fn returns `Ok(T::default())`.
pub fn busy_skip<T: Default, E>(_busy: LockError, _fail: fn(LockError) -> E) -> Result<T, E> {
    Ok(T::default())
}

/// Takes the lock `key` on `client`, runs `body` (given the fencing token) while holding it,
/// and releases it. `fail` turns a lock failure into the fn's error.
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
    fail: fn(LockError) -> E,
) -> Result<T, E>
where
    C: Borrow<LockClient>,
    B: FnOnce(FencingToken) -> F,
    F: Future<Output = Result<T, E>>,
    S: FnOnce(LockError, fn(LockError) -> E) -> Result<T, E>,
{
    let client = client.map_err(fail)?;
    // Only a subscriber that may want the `locked` span pays for reading the clock.
    let started = tracing::level_enabled!(tracing::Level::DEBUG).then(std::time::Instant::now);
    let mut request = client.borrow().lock(key.as_str());
    if let Some(lease) = options.lease {
        request = request.lease(lease);
    }
    let Some(guard) = request.acquire_with(options.wait).await.map_err(fail)? else {
        let waited = match options.wait {
            WaitPolicy::Within(wait) => wait,
            _ => Duration::ZERO,
        };
        return on_busy(LockError::Busy { key, waited }, fail);
    };
    let fence = guard.fencing_token();
    // The locked section, for the subscriber: which key, which grant, how long it waited.
    let span = tracing::debug_span!(
        "locked",
        key = key.as_str(),
        fence = fence.get(),
        waited_ms = started.map_or(0, |started| {
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
        }),
    );
    let work = tracing::Instrument::instrument(body(fence), span);

    if !options.cancel_on_lost {
        let output = work.await;
        let _released: Result<bool, LockError> = match options.hold_at_least {
            Some(at_least) => guard.release_after(at_least).await,
            None => guard.release().await,
        };
        return output;
    }

    let lost = guard.lost();
    let output = tokio::select! {
        biased;
        reason = lost => {
            let _released: Result<bool, LockError> = guard.release().await;
            return Err(fail(LockError::LeaseLost { key, reason }));
        }
        output = work => output,
    };
    // The body finished, but a loss it raced with still means it ran unprotected.
    if let Err(lost) = guard.ensure_held() {
        let _released: Result<bool, LockError> = guard.release().await;
        return Err(fail(lost));
    }
    match guard.release().await {
        // Gone from the backend before the watchdog noticed: deleted or taken over.
        Ok(false) => Err(fail(LockError::LeaseLost {
            key,
            reason: LostReason::NotOwner,
        })),
        Ok(true) | Err(_) => output,
    }
}

/// The cache named by `#[single_flight(cache = <expr>)]`: anything that borrows as a
/// [`Cache`](crate::cache::Cache) (`Cache`, `Arc<Cache>`, a reference to either, an actix
/// `web::Data<Cache>` through auto-deref), cloned so the fn's arguments can move into the
/// computation afterwards.
pub trait CacheSource {
    /// A handle to the cache (a cheap clone).
    fn __single_flight_cache(&self) -> Result<crate::cache::Cache, LockError>;
}

impl<T: Borrow<crate::cache::Cache> + ?Sized> CacheSource for T {
    fn __single_flight_cache(&self) -> Result<crate::cache::Cache, LockError> {
        Ok(self.borrow().clone())
    }
}

/// `#[single_flight]`'s settings, fixed at compile time; `None` keeps the cache's own.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlightOptions {
    /// `ttl`: how long a value is fresh.
    pub fresh: Option<Duration>,
    /// `stale`: how long it is served stale while one refresh runs.
    pub stale_while_revalidate: Option<Duration>,
    /// `stale_if_error`: how long it is served stale when a refresh fails.
    pub stale_if_error: Option<Duration>,
    /// `negative_ttl`: how long a failure is remembered.
    pub negative: Option<Duration>,
    /// `wait`: how long to wait for another caller's computation.
    pub wait: Option<Duration>,
}

/// The value of `key` in `cache`, stored as JSON: fresh or stale from the store, or computed
/// by `compute` once across every caller of every instance. The computation's own error comes
/// back as it is; every other failure through `fail`.
#[cfg(feature = "json")]
pub async fn single_flight<T, E, F, Fut>(
    cache: Result<crate::cache::Cache, LockError>,
    key: String,
    options: FlightOptions,
    fail: fn(CacheFailure) -> E,
    compute: F,
) -> Result<T, E>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
    E: fmt::Display + Send + Sync + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
{
    let cache = cache.map_err(|error| fail(CacheFailure::Lock(error)))?;
    let mut request = cache.entry(key).json();
    if let Some(fresh) = options.fresh {
        request = request.fresh_for(fresh);
    }
    if let Some(window) = options.stale_while_revalidate {
        request = request.stale_while_revalidate(window);
    }
    if let Some(window) = options.stale_if_error {
        request = request.stale_if_error(window);
    }
    if let Some(ttl) = options.negative {
        request = request.negative_ttl(ttl);
    }
    if let Some(wait) = options.wait {
        request = request.wait_at_most(wait);
    }
    // The fn's own error stays the leader's (`Compute`): a shared `Arc<E>` could not become
    // the fn's `E` (not `Clone`), so the followers get its message.
    match request.try_get_with_unshared_errors(compute).await {
        Ok(cached) => Ok(cached.value),
        Err(error) => Err(fn_error(error, fail)),
    }
}

/// The fn's error for a failed cache call: its computation's own error as it is, anything else
/// through [`CacheFailure`](crate::cache::CacheFailure).
#[cfg(feature = "json")]
fn fn_error<E: fmt::Display>(error: crate::cache::CacheError<E>, fail: fn(CacheFailure) -> E) -> E {
    use crate::cache::CacheError;

    // Exhaustive on purpose: a new variant must decide here whose error it is.
    fail(match error {
        CacheError::Compute(error) => return error,
        CacheError::Shared(error) => CacheFailure::Elsewhere(error.to_string()),
        CacheError::Elsewhere(message) => CacheFailure::Elsewhere(message),
        CacheError::TooLarge { size, limit } => CacheFailure::TooLarge { size, limit },
        CacheError::WaitTimedOut(waited) => CacheFailure::WaitTimedOut(waited),
        CacheError::Lock(error) => CacheFailure::Lock(error),
        CacheError::Decode(message) => CacheFailure::Decode(message),
    })
}
