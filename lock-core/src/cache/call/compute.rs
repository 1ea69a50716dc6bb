//! Computing under the key's lease, and what each outcome leaves in the store. Every outcome
//! is pushed to the callers waiting for it, so none of them computes it again:
//!
//! | the computation gave | stored (with the lease's fencing token) | the waiters |
//! |---|---|---|
//! | a value | the value (`V`), for its windows | take it |
//! | a value not to be shared (or too large) | a pass-through mark (`P`, no payload) for the pass-through TTL, or nothing | compute their own, at once |
//! | a failure, with a value still there (stale, stale-if-error) | the failure keeping that value (`F`): fresh for the negative TTL, kept as long as the value | are served that value |
//! | a failure, nothing to fall back on | the failure (`E`) for the negative TTL (without one: never fresh, kept for the waiters only) | are handed the failure |
//!
//! A waiter that takes the lease over before a push reaches it reads the outcome in the store
//! (anything stored since its own read, from a computation whose lease came before its own).
//! The store keeps an entry only over an older one (by fencing token), so a computation
//! whose lease ran out while it computed (a paused or starved process) cannot overwrite what
//! the caller that took over stored.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::handed::{cached, landed_elsewhere};
use super::{Call, Led};
use crate::cache::computed::{CallError, Compute, Computed, Failure, Outcome, SharedFailure};
use crate::cache::entry::{Kind, StoredEntry};
use crate::cache::{CacheError, CacheStatus, Cached};
use crate::{FencingToken, LockGuard};

/// What the entry held right after the lease was granted, if the lease's grant read it.
pub(super) enum AfterGrant {
    /// Not read with the grant: read it now.
    Unread,
    /// Read in the call that granted the lease (`None`: nothing there).
    Read(Option<Vec<u8>>),
}

impl Call {
    /// Holding the lease: reads once more (unless the grant did), computes, stores what came
    /// of it, releases. `seen`: the fence of the entry this call's read found, if any.
    pub(super) async fn compute_under<E>(
        &self,
        guard: LockGuard,
        after_grant: AfterGrant,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
        seen: Option<FencingToken>,
    ) -> Led<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        Led::Outcome(match self.reread(guard, after_grant, compute, seen).await {
            Ok((guard, compute)) => self.compute_and_store(guard, compute, fallback).await,
            Err(led) => return led,
        })
    }

    /// Another instance may have stored while this one queued for the lease: its outcome
    /// (`Err`, the lease released), or the lease and the computation back to go on with.
    async fn reread<E>(
        &self,
        guard: LockGuard,
        after_grant: AfterGrant,
        compute: Compute<E>,
        seen: Option<FencingToken>,
    ) -> Result<(LockGuard, Compute<E>), Led<E>> {
        let stored = match after_grant {
            AfterGrant::Read(stored) => stored,
            AfterGrant::Unread => self.cache.inner.store.get(&self.key).await.ok().flatten(),
        };
        if let Some(bytes) = stored {
            if let Ok(entry) = StoredEntry::decode(&bytes) {
                if entry.fence < guard.fencing_token()
                    && entry.is_outcome_for(seen, SystemTime::now())
                {
                    release(guard).await;
                    return Err(match landed_elsewhere(&entry, false) {
                        Some(outcome) => Led::Outcome(outcome),
                        None => Led::Own(compute),
                    });
                }
            }
        }
        Ok((guard, compute))
    }

    /// Computes under the lease, stores what came of it, releases.
    async fn compute_and_store<E>(
        &self,
        guard: LockGuard,
        compute: Compute<E>,
        fallback: Option<StoredEntry>,
    ) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        let inner = &self.cache.inner;
        let started = Instant::now();
        let computed = compute().await;
        let computed_in = started.elapsed();
        let fence = guard.fencing_token();
        let now = SystemTime::now();
        let policy = self.freshness;
        let pass = |policy| StoredEntry::new(Kind::Pass, fence, computed_in, policy, Vec::new());
        let (entry, answer): (StoredEntry, Outcome<E>) = match computed {
            Ok(Computed::Value(bytes, _)) if bytes.len() > inner.max_value_bytes => {
                let error = CacheError::TooLarge {
                    size: bytes.len(),
                    limit: inner.max_value_bytes,
                };
                (pass(&policy), Err(error.into()))
            }
            Ok(Computed::Value(bytes, keep)) => {
                let entry = StoredEntry::new(Kind::Value, fence, computed_in, &keep, bytes);
                let value = cached(&entry, CacheStatus::Computed, entry.stored_at);
                (entry, Ok(value))
            }
            Ok(Computed::Unshared { value, mark }) => {
                let mut entry = pass(&policy);
                if !mark {
                    entry.fresh = Duration::ZERO;
                }
                (entry, Ok(own(value, CacheStatus::Uncacheable, computed_in)))
            }
            Err(Failure::Alone(error)) => {
                release(guard).await;
                return match fallback {
                    Some(stale) => Ok(cached(&stale, CacheStatus::StaleIfError, now)),
                    None => Err(CallError::Own {
                        error: CacheError::Compute(error),
                        shared: None,
                    }),
                };
            }
            Err(failure) => match fallback {
                Some(stale) => {
                    let negative = policy.negative;
                    let entry = StoredEntry::failed_over(fence, computed_in, negative, &stale, now);
                    (entry, Ok(cached(&stale, CacheStatus::StaleIfError, now)))
                }
                None => {
                    let payload = failure.shared().unwrap_or_default();
                    let entry = StoredEntry::new(Kind::Error, fence, computed_in, &policy, payload);
                    let shared = SharedFailure {
                        payload: entry.payload.clone(),
                        remembered: false,
                        failed_at: entry.stored_at,
                        negative: entry.fresh,
                        typed: None,
                    };
                    let error = failure.into_error();
                    (
                        entry,
                        Err(CallError::Own {
                            error,
                            shared: Some(shared),
                        }),
                    )
                }
            },
        };
        let keep = match entry.kind {
            // As long as the value it keeps: never fresh without a negative TTL, when it
            // serves later callers as that value would.
            Kind::Value | Kind::FailedOver => entry.keep_for(),
            // Without a negative TTL, kept (never fresh, ignored by later callers) only for the
            // callers waiting for it: one that takes the lease over before the push reaches it
            // finds it there.
            Kind::Error if entry.fresh.is_zero() => self.wait,
            // Zero pushes without storing: a value not to be shared, without a mark, leaves
            // the entry there as it is (the waiters compute their own, or under the lease).
            Kind::Error | Kind::Pass => entry.fresh,
        };
        let stored = entry.put_on(&*inner.store, &self.key, keep).await;
        // Stored (and pushed) before the lease goes, so waiters get the outcome, not the
        // lease; the release runs on its own, as this caller and its flight need not wait. The
        // key's fencing state is kept as long as what was stored under its token (the cache's
        // leases keep it only as long as themselves), so the next computation's token is
        // larger whatever the server's clock does meanwhile.
        let keep_fence = (matches!(stored, Ok(true)) && !keep.is_zero()).then_some(keep);
        tokio::spawn(async move {
            if let Some(keep) = keep_fence {
                if let Err(error) = guard.keep_fence_for(keep).await {
                    tracing::debug!(error = %error.with_causes(), "keeping a cache key's fencing state failed; the server clock keeps tokens increasing");
                }
            }
            release(guard).await;
        });
        match (stored, answer) {
            (Ok(false), answer) => {
                tracing::debug!(key = %self.key, %fence, "a newer entry was stored meanwhile; this one was not");
                answer
            }
            (Err(error), Ok(mut value)) if entry.kind == Kind::Value => {
                // The backend's breaker reports an outage once; each call in it is DEBUG.
                if error.is_unavailable() {
                    tracing::debug!(key = %self.key, error = %error.with_causes(), "storing the computed value failed; served without storing");
                } else {
                    tracing::warn!(key = %self.key, error = %error.with_causes(), "storing the computed value failed; served without storing");
                }
                value.status = CacheStatus::FailOpen;
                Ok(value)
            }
            (Err(error), answer) => {
                if error.is_unavailable() {
                    tracing::debug!(key = %self.key, error = %error.with_causes(), "storing a computation's outcome failed");
                } else {
                    tracing::warn!(key = %self.key, error = %error.with_causes(), "storing a computation's outcome failed");
                }
                answer
            }
            (Ok(true), answer) => answer,
        }
    }

    /// Computes without a lease and without storing.
    pub(super) async fn unshared<E>(&self, compute: Compute<E>, status: CacheStatus) -> Outcome<E>
    where
        E: std::fmt::Display + Send + Sync + 'static,
    {
        let limit = self.cache.inner.max_value_bytes;
        let started = Instant::now();
        let computed = compute().await;
        let computed_in = started.elapsed();
        let (value, status) = match computed {
            Ok(Computed::Value(value, _)) => (value, status),
            // A value its computation says must not be shared stays this caller's, whatever
            // the reason it was computed without a lease: followers compute their own.
            Ok(Computed::Unshared { value, .. }) if status == CacheStatus::PassThrough => {
                (value, status)
            }
            Ok(Computed::Unshared { value, .. }) => (value, CacheStatus::Uncacheable),
            Err(failure) => {
                // Shared with the followers in this process; stored nowhere.
                let shared = failure.shared().map(|payload| SharedFailure {
                    payload,
                    remembered: false,
                    failed_at: SystemTime::now(),
                    negative: Duration::ZERO,
                    typed: None,
                });
                return Err(CallError::Own {
                    error: failure.into_error(),
                    shared,
                });
            }
        };
        if value.len() > limit {
            return Err(CacheError::TooLarge {
                size: value.len(),
                limit,
            }
            .into());
        }
        Ok(own(value, status, computed_in))
    }
}

/// A value this caller computed and keeps to itself.
fn own(value: Vec<u8>, status: CacheStatus, computed_in: Duration) -> Cached<Vec<u8>> {
    Cached {
        value,
        status,
        stored_at: SystemTime::now(),
        computed_in,
        fresh_for: Duration::ZERO,
        fencing_token: None,
    }
}

pub(in crate::cache) async fn release(guard: LockGuard) {
    if let Err(error) = guard.release().await {
        tracing::debug!(error = %error.with_causes(), "releasing a cache computation's lease failed; its TTL frees it");
    }
}
