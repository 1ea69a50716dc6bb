//! Claiming a key, and what a claim does when its request ends: complete the record (only
//! under the current fencing token), or give the key back for the next request.

use std::future::Future;
use std::time::Duration;

use super::record::Record;
use super::stats::Counters;
use super::{ClaimInfo, Completed, Fingerprint, Idempotency};
use crate::results::Replace;
use crate::results::StoredResponse;
use crate::{LockGuard, LockKey, LockOwner, LostReason, Result};

/// What a duplicate does while the first request with its key is still running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum InFlight {
    /// Answer at once: [`Begin::InFlight`] (409 with `Retry-After` over HTTP), as the IETF
    /// draft and Stripe do.
    #[default]
    Conflict,
    /// Wait up to this long for the running request's response (pushed by the store when it
    /// completes) and replay it; should the running request's claim end without a response
    /// (a 5xx, a crash), run instead. [`Begin::InFlight`] when the wait ends first.
    Wait(Duration),
}

/// How a request with an idempotency key starts.
#[derive(Debug)]
#[must_use]
pub enum Begin {
    /// This request claimed the key: run it, then [`Claim::complete`] (or [`Claim::release`]
    /// to let the next request run).
    Run(Claim),
    /// A request with this key and the same fingerprint completed: answer with its response.
    Replay(Completed),
    /// Another request with this key is running.
    InFlight,
    /// This key was used by a request with another fingerprint (another body, path or
    /// method): refuse (422 over HTTP).
    Mismatch,
}

/// How a claim's completion ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// The record is completed with this response; duplicates replay it.
    Stored(Completed),
    /// A newer claim took the key over (this claim's lease was lost: a pause, a partition)
    /// and its record stands; this response was discarded. The newer claim's response, if it
    /// has completed.
    Superseded(Option<Completed>),
}

/// A key claimed by one request: a fenced lease, kept alive while the request runs, and the
/// in-flight record. Dropped without [`complete`](Self::complete) or
/// [`release`](Self::release) (a cancelled or panicking handler), the lease is released at
/// once and the next request with the key runs.
#[must_use = "a claim not completed lets the next request with its key run again"]
pub struct Claim {
    idempotency: Idempotency,
    key: LockKey,
    fingerprint: Fingerprint,
    guard: LockGuard,
    info: ClaimInfo,
}

impl Claim {
    /// The claim of `key` whose in-flight record `guard`'s fence has just written.
    pub(super) fn new(
        idempotency: &Idempotency,
        key: LockKey,
        fingerprint: Fingerprint,
        guard: LockGuard,
    ) -> Self {
        let (scope, client_key) = split_record_name(key.name());
        #[allow(unused_mut)] // without `postgres`, nothing more to fill in
        let mut info = ClaimInfo::new(scope, client_key, guard.fencing_token());
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        {
            info.commit = idempotency.commit_handle(&key, fingerprint);
        }
        Self {
            idempotency: idempotency.clone(),
            key,
            fingerprint,
            guard,
            info,
        }
    }

    /// The scope, key and fencing token.
    #[must_use]
    pub fn info(&self) -> &ClaimInfo {
        &self.info
    }

    /// The records this claim is in (the HTTP layer counts its outcomes there).
    #[cfg(feature = "http")]
    pub(crate) fn idempotency(&self) -> &Idempotency {
        &self.idempotency
    }

    /// Resolves when the claim's lease is lost: stop the handler (the HTTP layers drop it and
    /// answer 503); its completion would be refused anyway if another claim took over.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        self.guard.lost()
    }

    /// Completes the record with `response`, *only if no newer claim has written it* (the
    /// store compares fencing tokens), then releases the lease.
    ///
    /// On a store error the record is left in flight and the lease is left to run out (not
    /// released, not marked done): a retry then runs again after the lease, rather than the
    /// request being recorded as done without its response. The error says so.
    pub async fn complete(self, response: StoredResponse) -> Result<Completion> {
        let Self {
            idempotency,
            key,
            fingerprint,
            guard,
            info,
        } = self;
        let completed = Completed::new(info.fencing_token, response);
        let entry = Record::encode_completed(&fingerprint, &completed);
        let (stored, guard) =
            end_record(&idempotency, &key, guard, &entry, Replace::OlderOrSame).await;
        match stored {
            Ok(true) => {
                // The record is final now; the release need not delay the response.
                drop(guard);
                Ok(Completion::Stored(completed))
            }
            Ok(false) => {
                drop(guard);
                let there = match idempotency.read(&key).await? {
                    Some(Record::Completed { completed, .. }) => Some(completed),
                    _ => None,
                };
                // Completed under this very claim: by the handler, in its own transaction
                // (`ClaimInfo::commit_in`), together with its effect.
                if let Some(mine) = there
                    .as_ref()
                    .filter(|there| there.fencing_token == info.fencing_token)
                {
                    return Ok(Completion::Stored(mine.clone()));
                }
                Counters::add(&idempotency.inner.counters.superseded);
                tracing::warn!(key = %key, fence = %info.fencing_token, "a newer claim took the key over; this response is discarded");
                Ok(Completion::Superseded(there))
            }
            Err(error) => {
                Counters::add(&idempotency.inner.counters.store_failed);
                // The backend's breaker reports an outage once (and `store_failed` counts
                // this); anything else is an error of its own.
                if error.is_unavailable() {
                    tracing::debug!(key = %key, fence = %info.fencing_token, error = %error.with_causes(), "the completed response could not be stored; the claim is left to expire");
                } else {
                    tracing::error!(key = %key, fence = %info.fencing_token, error = %error.with_causes(), "the completed response could not be stored; the claim is left to expire");
                }
                if let Some(guard) = guard {
                    guard.abandon();
                }
                Err(error)
            }
        }
    }

    /// Ends the claim without a response worth replaying (a 5xx, a cancelled handler): the
    /// record is marked abandoned (so waiting duplicates stop waiting), the lease released,
    /// and the next request with the key runs.
    pub async fn release(self) -> Result<()> {
        let Self {
            idempotency,
            key,
            guard,
            info,
            ..
        } = self;
        let entry = Record::encode_abandoned(info.fencing_token);
        let (marked, guard) =
            end_record(&idempotency, &key, guard, &entry, Replace::OlderOrSame).await;
        // Released before answering, so that an immediate retry finds the key free.
        let released = match guard {
            Some(guard) => guard.release().await.map(drop),
            None => Ok(()),
        };
        marked?;
        released
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl Claim {
    /// With [`RecoveryPoints`](super::RecoveryPoints): `point` is the answer an earlier
    /// execution of this request committed together with its effect, before its process died
    /// without completing the record. The record is completed with it (under this claim) and
    /// it is replayed: nothing runs again. Without a point, the claim runs.
    async fn recovered(self, point: Option<Vec<u8>>) -> Result<Begin> {
        let inner = &self.idempotency.inner;
        let Some(point) = point else {
            return Ok(Begin::Run(self));
        };
        let (theirs, completed) = match Record::decode(&point)? {
            Record::Completed {
                fingerprint,
                completed,
            } => (fingerprint, completed),
            // Points are written completed; anything else is not an answer.
            _ => return Ok(Begin::Run(self)),
        };
        if theirs != self.fingerprint {
            self.release().await?;
            return Ok(Begin::Mismatch);
        }
        tracing::info!(key = %self.key, fence = %completed.fencing_token, "replaying the answer an earlier execution committed with its effect (recovery point)");
        let entry = Record::encode_completed(&theirs, &completed);
        let stored = inner
            .put_record(
                &self.key,
                self.info.fencing_token,
                &entry,
                Replace::OlderOrSame,
            )
            .await;
        match stored {
            Ok(_) => {}
            // The answer is known all the same; the next duplicate finds the point again. The
            // backend's breaker reports an outage once.
            Err(error) if error.is_unavailable() => {
                tracing::debug!(key = %self.key, error = %error.with_causes(), "completing a record from its recovery point failed");
            }
            Err(error) => {
                tracing::warn!(key = %self.key, error = %error.with_causes(), "completing a record from its recovery point failed");
            }
        }
        drop(self.guard);
        Ok(Begin::Replay(completed))
    }
}

/// Writes the record a claim ends with (`entry`, under `rule`): with fused claims in one script
/// that also releases the lease (the guard is then done with: `None`), else as a put, handing
/// the guard back for the caller to release, drop or abandon.
async fn end_record(
    idempotency: &Idempotency,
    key: &LockKey,
    guard: LockGuard,
    entry: &[u8],
    rule: Replace,
) -> (Result<bool>, Option<LockGuard>) {
    if let Some(fused) = idempotency.inner.fused.as_ref() {
        let stored = fused.end(idempotency, key, &guard, entry, rule).await;
        // Released by the script; after an error, left to run out.
        guard.abandon();
        return (stored, None);
    }
    let stored = idempotency
        .inner
        .put_record(key, guard.fencing_token(), entry, rule)
        .await;
    (stored, Some(guard))
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("key", &self.key)
            .field("fence", &self.info.fencing_token)
            .finish_non_exhaustive()
    }
}

pub(super) async fn begin(
    idempotency: &Idempotency,
    key: LockKey,
    fingerprint: Fingerprint,
    in_flight: InFlight,
) -> Result<Begin> {
    if let (InFlight::Conflict, Some(fused)) = (in_flight, idempotency.inner.fused.as_ref()) {
        return fused.begin(idempotency, key, fingerprint).await;
    }
    let guard = match in_flight {
        InFlight::Conflict => match read_and_try_claim(idempotency, &key, fingerprint).await? {
            Ok(guard) => guard,
            Err(begin) => return Ok(begin),
        },
        InFlight::Wait(wait) => match wait_for(idempotency, &key, fingerprint, wait).await? {
            Waited::Claimed(guard) => guard,
            Waited::Answer(begin) => return Ok(begin),
        },
    };
    claim(idempotency, key, fingerprint, guard).await
}

/// What a record already says, without a claim: a replay or a refusal.
pub(super) fn settled(record: Option<Record>, fingerprint: Fingerprint) -> Option<Begin> {
    match record? {
        Record::Completed {
            fingerprint: theirs,
            completed,
        } => Some(answer(theirs, fingerprint, completed)),
        Record::InFlight {
            fingerprint: theirs,
            ..
        } if theirs != fingerprint => Some(Begin::Mismatch),
        _ => None,
    }
}

/// Reads the record and, at the same time, tries the key's lease: a first request (the
/// common case) then pays one round trip for both instead of two in a row. The read is sent
/// first, so a replay is answered as soon as it returns; the lease that attempt may have
/// taken is then given back in the background (the acquire is cancel-safe), at the price of
/// a lease round trip on the server for each replay, which are the rare requests.
async fn read_and_try_claim(
    idempotency: &Idempotency,
    key: &LockKey,
    fingerprint: Fingerprint,
) -> Result<std::result::Result<LockGuard, Begin>> {
    let owner = LockOwner::new();
    let read = idempotency.read(key);
    let acquire = idempotency
        .inner
        .locks
        .lock(key.name())
        .owner(&owner)
        .try_acquire();
    let (mut read, mut acquire) = (std::pin::pin!(read), std::pin::pin!(acquire));
    let mut acquired = None;
    let record = std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(record) = read.as_mut().poll(cx) {
            return std::task::Poll::Ready(record);
        }
        if acquired.is_none() {
            if let std::task::Poll::Ready(outcome) = acquire.as_mut().poll(cx) {
                acquired = Some(outcome);
            }
        }
        std::task::Poll::Pending
    })
    .await?;
    if let Some(begin) = settled(record, fingerprint) {
        // Dropping a pending acquire (or a granted guard) releases what it may have taken.
        return Ok(Err(begin));
    }
    let acquired = match acquired {
        Some(outcome) => outcome,
        None => acquire.await,
    };
    Ok(acquired?.ok_or(Begin::InFlight))
}

/// Marks the record in flight under the new claim's fence.
async fn claim(
    idempotency: &Idempotency,
    key: LockKey,
    fingerprint: Fingerprint,
    guard: LockGuard,
) -> Result<Begin> {
    let fence = guard.fencing_token();
    let in_flight = Record::encode_in_flight(fence, &fingerprint);
    let put = idempotency
        .inner
        .put_record(&key, fence, &in_flight, Replace::Older);
    // With recovery points, the look for one goes with the in-flight put (two stores, one
    // round trip's wait); it is only used once the put has made the claim this request's.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    let (stored, point) = match idempotency
        .commit_place()
        .and_then(|p| p.find_point(key.full()))
    {
        Some(find) => {
            let (stored, point) = tokio::join!(put, find);
            (stored?, point?)
        }
        None => (put.await?, None),
    };
    #[cfg(not(any(feature = "postgres", feature = "mysql")))]
    let stored = put.await?;
    if stored {
        let claim = Claim::new(idempotency, key, fingerprint, guard);
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        return claim.recovered(point).await;
        #[cfg(not(any(feature = "postgres", feature = "mysql")))]
        return Ok(Begin::Run(claim));
    }
    // A request completed between our read and our claim (or a newer claim wrote, and this
    // lease is already lost).
    drop(guard);
    Ok(match idempotency.read(&key).await? {
        Some(Record::Completed {
            fingerprint: theirs,
            completed,
        }) => answer(theirs, fingerprint, completed),
        _ => Begin::InFlight,
    })
}

enum Waited {
    Claimed(LockGuard),
    Answer(Begin),
}

/// Waits for the running request's response (pushed) or for its claim to end (the lease),
/// whichever comes first, for up to `wait`.
async fn wait_for(
    idempotency: &Idempotency,
    key: &LockKey,
    fingerprint: Fingerprint,
    wait: Duration,
) -> Result<Waited> {
    // The watch reads the record as it registers, so it is the only read this path makes.
    let (mut pushes, there) = idempotency.inner.store.watch(key, wait).await?;
    let there = there.as_deref().map(Record::decode).transpose()?;
    if let Some(begin) = settled(there, fingerprint) {
        return Ok(Waited::Answer(begin));
    }
    let owner = LockOwner::new();
    let acquire = idempotency
        .inner
        .locks
        .lock(key.name())
        .owner(&owner)
        .acquire_within(wait);
    tokio::pin!(acquire);
    let mut pushes_open = true;
    loop {
        tokio::select! {
            acquired = &mut acquire => {
                return Ok(match acquired? {
                    Some(guard) => Waited::Claimed(guard),
                    None => Waited::Answer(Begin::InFlight),
                });
            }
            pushed = pushes.next_bytes(), if pushes_open => match pushed {
                Some(bytes) => {
                    if let Ok(Record::Completed { fingerprint: theirs, completed }) = Record::decode(&bytes) {
                        return Ok(Waited::Answer(answer(theirs, fingerprint, completed)));
                    }
                    // In flight under a newer claim, or abandoned: the lease decides.
                }
                None => pushes_open = false,
            },
        }
    }
}

fn answer(theirs: Fingerprint, ours: Fingerprint, completed: Completed) -> Begin {
    if theirs == ours {
        Begin::Replay(completed)
    } else {
        Begin::Mismatch
    }
}

/// `<len>:<scope>:<key>` (or `#<hash>:<key>`) → (scope, key); a hashed scope is reported as
/// its hash.
fn split_record_name(name: &str) -> (String, String) {
    if let Some(rest) = name.strip_prefix('#') {
        if let Some((hash, key)) = rest.split_once(':') {
            return (format!("#{hash}"), key.to_owned());
        }
    }
    if let Some((length, rest)) = name.split_once(':') {
        if let Ok(length) = length.parse::<usize>() {
            if let (Some(scope), Some(key)) = (rest.get(..length), rest.get(length + 1..)) {
                return (scope.to_owned(), key.to_owned());
            }
        }
    }
    (String::new(), name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_split_back_into_scope_and_key() {
        assert_eq!(
            split_record_name("5:al:ce:k:1"),
            ("al:ce".into(), "k:1".into())
        );
        assert_eq!(split_record_name("0::k"), (String::new(), "k".into()));
        assert_eq!(split_record_name("#abc:k"), ("#abc".into(), "k".into()));
    }
}
