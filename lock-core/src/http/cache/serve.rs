//! One request through the response cache, written once for every adapter.
//!
//! A request the cache may answer goes through lock-core's cache primitive, whose
//! computation calls the application: on a miss exactly one request across every instance
//! computes; the others wait for its response (or, when it is not to be shared, compute their
//! own). The computation must be `Send + 'static` and may outlive the request (a background
//! refresh), so two shared slots carry what does not fit through the primitive:
//!
//! - the **origin slot** holds the adapter's call of the application; whoever takes it calls
//!   it, be it this request's computation, a background refresh, or this request on its own
//!   after the cache could not help (the response it waited for was not to be shared);
//! - the **leader slot** receives, from this request's computation, the application's
//!   response itself ([`Leader`]). The primitive only ever sees the *encoded stored response*
//!   (when the response decision says store) or an empty value with no freshness (not to be
//!   stored or shared: waiters compute their own, status `Uncacheable`). The request that
//!   computed answers from this slot with the application's own response, `Set-Cookie` and
//!   all, never from the bytes stored for others.
//!
//! **Oversized bodies.** `Content-Length` over the limit is refused by the response decision
//! before a byte is read. A body of unknown length is read up to the limit; once a chunk
//! crosses it, reading stops, the computation says "not to be stored or shared", and the
//! response goes to its own request through the leader slot with the bytes already read as
//! `prefix`; the adapter sends the prefix and then streams the rest. Nothing is stored, and
//! the waiters call the application themselves (they cannot be handed a body that was never
//! buffered).
//!
//! **Failures.** `5xx` statuses the rules do not store (500, 502, 503, 504), a body that
//! failed and errors of the application are the computation's *failure*, handed to every
//! request waiting for it and remembered for the rules' negative TTL (default 1 s), so a
//! failing application is called once per key and window, not once per request:
//! - a stored response within its `stale-if-error` window is served instead (RFC 5861), to
//!   the request that computed (`fwd=stale; fwd-status=503; detail=stale-if-error`), to the
//!   waiting requests and, within the negative TTL, to later ones (`…; detail=stale-if-error`);
//! - otherwise the request that computed answers with the application's own response (or
//!   error); the waiting requests replay that response, read whole up to the largest body
//!   (status, replayable headers such as `Retry-After`, body: `fwd=miss; fwd-status=503;
//!   collapsed`), and so do later requests within the negative TTL (`hit; detail=negative`,
//!   `ttl` the seconds it is still remembered). An error of the application, or a body that
//!   failed or was too large to read whole, cannot be replayed: they get a `502` problem
//!   (`fwd=miss; collapsed; detail=origin-error`, then `hit; detail=negative`).
//!
//! **Pass-through.** A response that is not stored (for any other reason) marks its key
//! pass-through for the rules' pass-through TTL (default 30 s): only the decision is stored.
//! Meanwhile each request for the key calls the application at once, without a lease and
//! without waiting for another (`fwd=miss; fwd-status=200; detail=hit-for-pass`).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use self::fetch::{Leader, OriginFailed};
use super::{
    Answer, CacheKey, CacheStatusHeader, Forward, ForwardAs, FromOrigin, HttpCache, OriginResponse,
    RefreshReason, RequestDecision, Served,
};
use crate::cache::computed::CallError;
use crate::cache::{CacheError, CacheStatus, Cached, Freshness};
use crate::sync::lock;

mod answers;
mod fetch;

/// A slot shared between the request and the computation it hands the primitive.
type Slot<T> = Arc<Mutex<Option<T>>>;

fn take<T>(slot: &Slot<T>) -> Option<T> {
    lock(slot).take()
}

/// A request the cache serves (a lookup or a refresh); made by [`HttpCache::plan`].
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{Cache, Freshness};
/// use lock_core::http::cache::{BodyFailed, ForwardAs, HeaderPairs, HttpCache, OriginResponse, Plan, RequestParts, Served};
///
/// /// The application's response, as the adapter wraps it.
/// struct Text(&'static str, bool);
/// impl HeaderPairs for Text {
///     fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
///         each("content-type", b"text/plain");
///     }
/// }
/// impl OriginResponse for Text {
///     fn status(&self) -> u16 { 200 }
///     async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
///         Ok(std::mem::replace(&mut self.1, false).then(|| self.0.as_bytes().to_vec()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let http = HttpCache::builder(Cache::memory("web")?)
///     .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
///     .build()?;
/// // (`ttl` counts whole seconds left: 30, or 29 once a millisecond has passed.)
/// for expected in ["lock-core; fwd=miss; fwd-status=200; stored", "lock-core; hit; ttl="] {
///     let Plan::Cache(call) = http.plan(&RequestParts::get("/hello")) else { unreachable!() };
///     let origin = |_: ForwardAs| async { Ok::<_, std::convert::Infallible>(Text("hi", true)) };
///     match call.serve(origin).await {
///         // The request that computed answers with the application's own response.
///         Served::Origin(from) => assert_eq!(from.cache_status_value(None), expected),
///         // Later ones are replayed from the store.
///         Served::Answer(answer) => {
///             let status = answer.response.header("cache-status").unwrap();
///             assert!(status.starts_with(expected.as_bytes()));
///             assert_eq!(answer.response.body, b"hi");
///         }
///         _ => unreachable!(),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a cache call does nothing until `serve` is awaited"]
pub struct CacheCall {
    http: HttpCache,
    decision: RequestDecision,
    key: CacheKey,
}

impl CacheCall {
    pub(super) fn new(http: HttpCache, decision: RequestDecision, key: CacheKey) -> Self {
        Self {
            http,
            decision,
            key,
        }
    }

    /// What the rules decided about the request.
    #[must_use]
    pub fn decision(&self) -> &RequestDecision {
        &self.decision
    }

    /// The key its response is stored under.
    #[must_use]
    pub fn key(&self) -> &CacheKey {
        &self.key
    }

    /// Serves the request. `origin` calls the application (as a `GET` when told
    /// [`ForwardAs::Get`]); it is called at most once, maybe after this call returned (a
    /// background refresh of a stale response), maybe not at all (a hit).
    pub async fn serve<O, Fut, R, E>(self, origin: O) -> Served<R, E>
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let slot: Slot<O> = Arc::new(Mutex::new(Some(origin)));
        let served = match &self.decision {
            RequestDecision::Refresh(refresh) if refresh.reason == RefreshReason::Authorization => {
                // Its response may depend on who asked: never collapsed with others, never
                // stored (RFC 9111 §3.5 would allow storing a `public` one).
                self.alone(&slot, Forward::Request, Some("authorization"))
                    .await
            }
            RequestDecision::Refresh(_) => {
                self.through_cache(&slot, Forward::Request, true).await.0
            }
            RequestDecision::Lookup(lookup) => {
                let max_age = lookup.max_age;
                match self.through_cache(&slot, Forward::Miss, false).await {
                    // Older than the request accepts: compute anew, if the application is
                    // still this request's to call.
                    (_, Some(age)) if max_age.is_some_and(|max| age > max) && has(&slot) => {
                        self.through_cache(&slot, Forward::Request, true).await.0
                    }
                    (served, _) => served,
                }
            }
            RequestDecision::Bypass(_) => self.alone(&slot, Forward::Bypass, None).await,
        };
        let served = match served {
            Served::Answer(mut answer) => {
                super::vary::apply(&mut answer.response, self.http.rules().vary_headers());
                Served::Answer(answer)
            }
            served => served,
        };
        self.trace(&served);
        self.record(&served);
        served
    }

    /// Through the primitive: a stored response, another request's, or this one's. With the
    /// age of a response replayed from the store.
    async fn through_cache<O, Fut, R, E>(
        &self,
        slot: &Slot<O>,
        fwd: Forward,
        recompute: bool,
    ) -> (Served<R, E>, Option<Duration>)
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let side: Slot<Leader<R, E>> = Arc::new(Mutex::new(None));
        let compute = self.computation(slot.clone(), side.clone());
        let mut request = self
            .http
            .cache()
            .entry(self.key.as_str())
            .freshness(self.call_freshness());
        if let Some(wait) = self.http.wait() {
            request = request.wait_at_most(wait);
        }
        if recompute {
            // Anew, still collapsed, with the stored response as the stale-if-error fallback.
            request = request.recompute();
        }
        match request.computing(compute).await {
            Ok(cached) => self.settle(cached, &side, slot, fwd).await,
            Err(error) => (self.failed(error, &side, slot, fwd).await, None),
        }
    }

    /// What the primitive returned, as the answer.
    async fn settle<O, Fut, R, E>(
        &self,
        cached: Cached<Vec<u8>>,
        side: &Slot<Leader<R, E>>,
        slot: &Slot<O>,
        fwd: Forward,
    ) -> (Served<R, E>, Option<Duration>)
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let outcome = cached.status;
        let header = match outcome {
            // From the store (a refresh this started in the background may fill the leader
            // slot any time; it is not this request's answer).
            CacheStatus::Hit | CacheStatus::Stale => CacheStatusHeader::from_outcome(outcome),
            CacheStatus::Collapsed => CacheStatusHeader::forward(fwd).collapsed(),
            CacheStatus::StaleIfError => {
                let header = CacheStatusHeader::from_outcome(outcome);
                match take(side) {
                    Some(Leader::Passed { response, .. }) => header.fwd_status(response.status()),
                    _ => header,
                }
            }
            // This request's computation ran, here and now; or, with the backend down or the
            // wait over, the computation of another request of this process was shared.
            _ => match take(side) {
                Some(leader) => return (self.leader(leader, outcome, fwd), None),
                // Not to be shared (the primitive hands it over anyway in these cases).
                None if cached.value.is_empty() => {
                    let detail = self.header(outcome, fwd).detail;
                    let served = self.alone(slot, fwd, detail.as_deref()).await;
                    return (served, None);
                }
                None => self.header(outcome, fwd).collapsed(),
            },
        };
        match self.replay(&cached, header) {
            Some((answer, age)) => (Served::Answer(answer), Some(age)),
            None => (self.alone(slot, fwd, Some("unreadable-entry")).await, None),
        }
    }

    /// The primitive gave no value.
    async fn failed<O, Fut, R, E>(
        &self,
        error: CallError<OriginFailed>,
        side: &Slot<Leader<R, E>>,
        slot: &Slot<O>,
        fwd: Forward,
    ) -> Served<R, E>
    where
        O: FnOnce(ForwardAs) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: OriginResponse,
        E: Send + 'static,
    {
        let key = self.key.as_str();
        let member = |detail: &str| {
            CacheStatusHeader::forward(fwd)
                .detail(detail)
                .header_value(self.http.rules().cache_name())
        };
        let error = match error {
            // `OwnShared` is for callers sharing typed errors, which the response cache is not.
            CallError::Shared(failure) | CallError::OwnShared(failure) => {
                return Served::Answer(self.replay_failure(&failure, fwd))
            }
            CallError::Own { error, .. } | CallError::Cache(error) => error,
        };
        match error {
            CacheError::Compute(_) | CacheError::TooLarge { .. } => match take(side) {
                Some(leader) => self.leader(leader, CacheStatus::Uncacheable, fwd),
                None => {
                    tracing::error!(key, %error, "response cache: a computation ended without a response");
                    Served::Answer(self.internal(&member("internal")))
                }
            },
            // `Shared` is for callers sharing typed errors, which the response cache is not.
            CacheError::Shared(_) | CacheError::Elsewhere(_) => {
                tracing::debug!(key, %error, "the request this one waited on failed; calling the application");
                self.alone(slot, fwd, Some("shared-failure")).await
            }
            CacheError::WaitTimedOut(waited) => {
                tracing::info!(
                    key,
                    ?waited,
                    "response cache: the wait for another request's response ran out"
                );
                Served::Answer(Answer::problem(
                    504,
                    "cache-timeout",
                    "Gateway Timeout",
                    "the response being computed for this request did not arrive in time",
                    member("wait-timed-out"),
                ))
            }
            CacheError::Lock(error) if error.is_unavailable() => {
                // The backend's breaker reports the outage once; each answer in it is DEBUG.
                tracing::debug!(key, error = %error.with_causes(), "response cache backend unavailable (fail closed)");
                let answer = Answer::problem(
                    503,
                    "cache-unavailable",
                    "Service Unavailable",
                    "the response cache is unavailable; try again shortly",
                    member("unavailable"),
                );
                // Refused by the breaker: retry when its probe is due.
                Served::Answer(match error.circuit_open() {
                    Some(open) => answer.retry_after(open.retry_after_secs()),
                    None => answer,
                })
            }
            CacheError::Lock(error) => {
                tracing::error!(key, error = %error.with_causes(), "response cache failed");
                Served::Answer(self.internal(&member("internal")))
            }
            CacheError::Decode(error) => {
                tracing::error!(key, %error, "response cache failed");
                Served::Answer(self.internal(&member("internal")))
            }
        }
    }

    /// This request's computation's response, as its own answer.
    fn leader<R: OriginResponse, E>(
        &self,
        leader: Leader<R, E>,
        outcome: CacheStatus,
        fwd: Forward,
    ) -> Served<R, E> {
        let name = self.http.rules().cache_name();
        let (response, body, complete, detail) = match leader {
            Leader::Stored { response, body } => (response, body, true, None),
            Leader::Passed {
                response,
                prefix,
                complete,
                detail,
            } => (response, prefix, complete, Some(detail)),
            Leader::NotForwarded => {
                let member = CacheStatusHeader::forward(fwd)
                    .detail("only-if-cached")
                    .header_value(name);
                return Served::Answer(Answer::problem(
                    504,
                    "not-cached",
                    "Gateway Timeout",
                    "only-if-cached: no stored response can answer this request",
                    member,
                ));
            }
            Leader::Failed(error) => return Served::Error(error),
        };
        let mut header = self.header(outcome, fwd).fwd_status(response.status());
        if let Some(detail) = detail {
            header.stored = false;
            // The backend being down or the wait running out says more than why the
            // response was not stored.
            if matches!(outcome, CacheStatus::Uncacheable | CacheStatus::Computed) {
                header.detail = Some(detail.to_owned());
            }
        }
        let mut from = FromOrigin::new(response, header, self.http.rules());
        from.complete = complete;
        from.prefix = body;
        from.head_only = self.head();
        Served::Origin(from)
    }

    /// Calls the application for this request alone, not through the primitive.
    async fn alone<O, Fut, R, E>(
        &self,
        slot: &Slot<O>,
        fwd: Forward,
        detail: Option<&str>,
    ) -> Served<R, E>
    where
        O: FnOnce(ForwardAs) -> Fut,
        Fut: Future<Output = Result<R, E>>,
        R: OriginResponse,
    {
        let name = self.http.rules().cache_name();
        let Some(origin) = take(slot) else {
            // A background refresh took the call; nothing else can answer this request.
            tracing::error!(
                key = self.key.as_str(),
                "response cache: the application was already called for this request"
            );
            let member = CacheStatusHeader::forward(fwd)
                .detail("internal")
                .header_value(name);
            return Served::Answer(self.internal(&member));
        };
        match origin(ForwardAs::AsSent).await {
            Ok(response) => {
                let mut header = CacheStatusHeader::forward(fwd).fwd_status(response.status());
                header.detail = detail.map(str::to_owned);
                Served::Origin(FromOrigin::new(response, header, self.http.rules()))
            }
            Err(error) => Served::Error(error),
        }
    }

    /// The primitive's freshness for this call: how stored responses are kept comes from each
    /// response; this supplies early refresh, and how long failures and pass-through marks
    /// are kept.
    fn call_freshness(&self) -> Freshness {
        let rules = self.http.rules();
        rules
            .default_freshness()
            .unwrap_or(Freshness::fresh_for(Duration::from_secs(60)))
            .negative_ttl(rules.negative_ttl())
            .pass_through(rules.pass_through_ttl())
    }

    fn head(&self) -> bool {
        match &self.decision {
            RequestDecision::Lookup(lookup) => lookup.head,
            RequestDecision::Refresh(refresh) => refresh.head,
            RequestDecision::Bypass(_) => false,
        }
    }
}

fn has<T>(slot: &Slot<T>) -> bool {
    lock(slot).is_some()
}

#[cfg(test)]
mod tests;
