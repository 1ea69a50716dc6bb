//! A stored value with what the cache needs to know about it, and its byte encoding.
//!
//! The encoding is one ASCII header line, then the payload:
//!
//! ```text
//! lc1 V 00000000000000000042 1732492800000 1500 60000 300000 3600000\n<payload bytes>
//!  │  │ │                    │             │    │     │      └ stale-if-error ms
//!  │  │ │                    │             │    │     └ stale-while-revalidate ms
//!  │  │ │                    │             │    └ fresh ms (for an error: how long it is kept)
//!  │  │ │                    │             └ compute time µs
//!  │  │ │                    └ stored at, ms since the Unix epoch
//!  │  │ └ fencing token of the computation, 20 digits (compares as text in the store)
//!  │  └ kind: V value, E failure, P pass, F failed over (below)
//!  └ version
//! ```
//!
//! - **V**: a value; its windows are those of the policy it was computed with.
//! - **E**: a failed computation, remembered for the negative TTL (`fresh`); the payload is
//!   what the callers who meet it are handed (the error's message; for the response cache,
//!   maybe the encoded response).
//! - **P**: a value that must not be shared: pushed to the waiting callers so each computes its
//!   own, and kept for the pass-through TTL (`fresh`, maybe 0) so later callers compute their
//!   own at once, without a lease. The payload is always empty: only the decision is stored.
//! - **F**: a failed computation that left the value before it in place: the payload is that
//!   value's entry, served in its stead (by its own windows, without computing) while the
//!   F entry is fresh (the negative TTL, at most as long as the value lives); the entry lives as
//!   long as the value would have.
//!
//! Times are wall-clock, since instances read each other's entries; a few ms of clock skew
//! between instances shift a window by as much, which a cache can afford.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Freshness;
use crate::results::{FENCE_DIGITS, VERSION};
use crate::{FencingToken, LockError};

/// What a stored entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Value,
    /// A failed computation, remembered for its negative TTL.
    Error,
    /// A value that must not be shared: the waiters compute their own, and so do later callers
    /// while it is fresh (its pass-through TTL).
    Pass,
    /// A failed computation that left the value before it (the payload) in place.
    FailedOver,
}

/// A value (or a remembered failure) as stored and as pushed to waiters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredEntry {
    pub(crate) kind: Kind,
    /// The computation's fencing token: a store keeps an entry only over an older one.
    pub(crate) fence: FencingToken,
    pub(crate) stored_at: SystemTime,
    pub(crate) computed_in: Duration,
    pub(crate) fresh: Duration,
    pub(crate) stale_while_revalidate: Duration,
    pub(crate) stale_if_error: Duration,
    pub(crate) payload: Vec<u8>,
}

/// Where an entry stands at a given moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Age {
    Fresh,
    /// Past fresh, within stale-while-revalidate.
    Stale,
    /// Past stale-while-revalidate, within stale-if-error: served only when computing fails.
    StaleIfError,
    Gone,
}

impl crate::results::ValueWatch {
    /// The next pushed cache entry; `None` when the store's push channel closed.
    pub(crate) async fn next(&mut self) -> Option<StoredEntry> {
        loop {
            let bytes = self.next_bytes().await?;
            if let Some(entry) = pushed(&bytes) {
                return Some(entry);
            }
        }
    }

    /// A pushed cache entry that has already arrived, without waiting.
    pub(crate) fn arrived(&mut self) -> Option<StoredEntry> {
        loop {
            let bytes = self.try_next_bytes()?;
            if let Some(entry) = pushed(&bytes) {
                return Some(entry);
            }
        }
    }
}

fn pushed(bytes: &[u8]) -> Option<StoredEntry> {
    StoredEntry::decode(bytes)
        .map_err(|error| tracing::warn!(%error, "ignoring a malformed pushed cache entry"))
        .ok()
}

impl StoredEntry {
    /// A computed value (or failure) stored now under `fence` with `policy`'s windows.
    pub(crate) fn new(
        kind: Kind,
        fence: FencingToken,
        computed_in: Duration,
        policy: &Freshness,
        payload: Vec<u8>,
    ) -> Self {
        let (fresh, swr, sie) = match kind {
            Kind::Value => (
                policy.fresh,
                policy.stale_while_revalidate,
                policy.stale_if_error,
            ),
            Kind::Error => (policy.negative, Duration::ZERO, Duration::ZERO),
            Kind::Pass => (policy.pass_through, Duration::ZERO, Duration::ZERO),
            // Made by `failed_over`, which knows the value it keeps.
            Kind::FailedOver => (Duration::ZERO, Duration::ZERO, Duration::ZERO),
        };
        Self {
            kind,
            fence,
            stored_at: SystemTime::now(),
            computed_in,
            fresh,
            stale_while_revalidate: swr,
            stale_if_error: sie,
            payload,
        }
    }

    /// A failure of the computation under `fence` that keeps `value` (a value entry not gone
    /// at `now`): fresh for `negative` (at most as long as `value` lives on), kept as long as
    /// `value` would have been.
    pub(crate) fn failed_over(
        fence: FencingToken,
        computed_in: Duration,
        negative: Duration,
        value: &StoredEntry,
        now: SystemTime,
    ) -> Self {
        let lives_on = value.gone_at().duration_since(now).unwrap_or_default();
        let fresh = negative.min(lives_on);
        Self {
            kind: Kind::FailedOver,
            fence,
            stored_at: now,
            computed_in,
            fresh,
            stale_while_revalidate: Duration::ZERO,
            stale_if_error: lives_on - fresh,
            payload: value.encode(),
        }
    }

    /// Stores the entry under `key` for `keep` (zero: pushed to the waiting processes, not
    /// stored), over an older entry only (by fencing token); false when a newer one is there.
    pub(crate) async fn put_on(
        &self,
        store: &dyn crate::results::DynResultStore,
        key: &crate::LockKey,
        keep: Duration,
    ) -> Result<bool, LockError> {
        use crate::results::{PutEntry, Replace, FENCE_AT};

        let encoded = self.encode();
        let digits = std::str::from_utf8(&encoded[FENCE_AT..FENCE_AT + FENCE_DIGITS])
            .unwrap_or_default()
            .to_owned();
        let put = PutEntry {
            fence_digits: &digits,
            entry: &encoded,
            keep,
            rule: Replace::Older,
        };
        store.put(key, put).await
    }

    /// The value this entry serves: itself for a value, the value it kept for a failure that
    /// failed over; `None` for the other kinds (and for an unreadable kept value).
    pub(crate) fn value(&self) -> Option<StoredEntry> {
        match self.kind {
            Kind::Value => Some(self.clone()),
            Kind::FailedOver => StoredEntry::decode(&self.payload)
                .ok()
                .filter(|kept| kept.kind == Kind::Value),
            Kind::Error | Kind::Pass => None,
        }
    }

    /// When it is gone (past every window).
    fn gone_at(&self) -> SystemTime {
        self.stored_at + self.fresh + self.stale_while_revalidate.max(self.stale_if_error)
    }

    /// Whether a caller whose read found the entry with fence `seen` (or none) takes this one
    /// as the outcome of the computation it waited for: stored since that read, and fresh, or a
    /// failure kept only for the callers waiting for it (no negative TTL: never fresh, ignored
    /// by later callers).
    pub(crate) fn is_outcome_for(&self, seen: Option<FencingToken>, now: SystemTime) -> bool {
        let since = seen.is_none_or(|seen| self.fence > seen);
        let for_waiters =
            matches!(self.kind, Kind::Error | Kind::FailedOver) && self.fresh.is_zero();
        since && (for_waiters || self.age(now) == Age::Fresh)
    }

    /// How long the store must keep it.
    pub(crate) fn keep_for(&self) -> Duration {
        self.fresh + self.stale_while_revalidate.max(self.stale_if_error)
    }

    /// When it stops being fresh.
    pub(crate) fn fresh_until(&self) -> SystemTime {
        self.stored_at + self.fresh
    }

    /// How old it is at `now` (zero if `now` is before it was stored: clock skew).
    pub(crate) fn age_at(&self, now: SystemTime) -> Duration {
        now.duration_since(self.stored_at).unwrap_or_default()
    }

    pub(crate) fn age(&self, now: SystemTime) -> Age {
        let age = self.age_at(now);
        if age < self.fresh {
            Age::Fresh
        } else if age < self.fresh + self.stale_while_revalidate {
            Age::Stale
        } else if age < self.fresh + self.stale_if_error {
            Age::StaleIfError
        } else {
            Age::Gone
        }
    }

    /// XFetch: refresh early when `now − Δ·β·ln(u) ≥ fresh until`, `u` uniform in (0, 1].
    pub(crate) fn refresh_early(&self, now: SystemTime, beta: f64, uniform: f64) -> bool {
        if beta <= 0.0 || self.kind != Kind::Value {
            return false;
        }
        let gap = -self.computed_in.as_secs_f64() * beta * uniform.max(f64::MIN_POSITIVE).ln();
        let remaining = self
            .fresh_until()
            .duration_since(now)
            .unwrap_or_default()
            .as_secs_f64();
        gap >= remaining
    }

    /// The entry as stored.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let header = format!(
            "{VERSION} {} {:0width$} {} {} {} {} {}\n",
            match self.kind {
                Kind::Value => 'V',
                Kind::Error => 'E',
                Kind::Pass => 'P',
                Kind::FailedOver => 'F',
            },
            self.fence.get(),
            millis_since_epoch(self.stored_at),
            self.computed_in.as_micros(),
            self.fresh.as_millis(),
            self.stale_while_revalidate.as_millis(),
            self.stale_if_error.as_millis(),
            width = FENCE_DIGITS,
        );
        let mut out = Vec::with_capacity(header.len() + self.payload.len());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    /// Reads an entry as stored; anything else is a typed error, never a panic.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, LockError> {
        let malformed = |why: &str| LockError::Protocol {
            backend: "cache",
            detail: format!("a stored cache entry is malformed: {why}"),
        };
        let end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| malformed("no header line"))?;
        let header = std::str::from_utf8(&bytes[..end]).map_err(|_| malformed("header"))?;
        let fields: Vec<&str> = header.split(' ').collect();
        let [version, kind, fence, stored_at, computed_us, fresh, swr, sie] = fields[..] else {
            return Err(malformed("header fields"));
        };
        if version != VERSION {
            return Err(malformed("unknown version"));
        }
        let number = |field: &str| field.parse::<u64>().map_err(|_| malformed("number"));
        let kind = match kind {
            "V" => Kind::Value,
            "E" => Kind::Error,
            "P" => Kind::Pass,
            "F" => Kind::FailedOver,
            _ => return Err(malformed("kind")),
        };
        Ok(Self {
            kind,
            fence: FencingToken::new(number(fence)?),
            stored_at: UNIX_EPOCH + Duration::from_millis(number(stored_at)?),
            computed_in: Duration::from_micros(number(computed_us)?),
            fresh: Duration::from_millis(number(fresh)?),
            stale_while_revalidate: Duration::from_millis(number(swr)?),
            stale_if_error: Duration::from_millis(number(sie)?),
            payload: bytes[end + 1..].to_vec(),
        })
    }
}

fn millis_since_epoch(at: SystemTime) -> u128 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::FENCE_AT;

    fn entry(fresh: u64, swr: u64, sie: u64) -> StoredEntry {
        let policy = Freshness::fresh_for(Duration::from_secs(fresh))
            .stale_while_revalidate(Duration::from_secs(swr))
            .stale_if_error(Duration::from_secs(sie));
        StoredEntry::new(
            Kind::Value,
            FencingToken::new(42),
            Duration::from_millis(1500),
            &policy,
            b"payload \n with newline".to_vec(),
        )
    }

    #[test]
    fn round_trips_and_keeps_the_fence_where_scripts_look() {
        let original = entry(60, 300, 3600);
        let bytes = original.encode();
        let mut decoded = StoredEntry::decode(&bytes).unwrap();
        // Stored with ms precision.
        decoded.stored_at = original.stored_at;
        assert_eq!(decoded, original);
        let fence = &bytes[FENCE_AT..FENCE_AT + FENCE_DIGITS];
        assert_eq!(fence, b"00000000000000000042");
    }

    #[test]
    fn ages_follow_the_windows() {
        let e = entry(60, 300, 3600);
        let at = |secs| e.stored_at + Duration::from_secs(secs);
        assert_eq!(e.age(at(0)), Age::Fresh);
        assert_eq!(e.age(at(59)), Age::Fresh);
        assert_eq!(e.age(at(60)), Age::Stale);
        assert_eq!(e.age(at(359)), Age::Stale);
        assert_eq!(e.age(at(360)), Age::StaleIfError);
        assert_eq!(e.age(at(3660)), Age::Gone);
        assert_eq!(e.keep_for(), Duration::from_secs(3660));
    }

    #[test]
    fn early_refresh_grows_towards_the_expiry() {
        let e = entry(60, 0, 0);
        let early = e.stored_at + Duration::from_secs(1);
        let late = e.stored_at + Duration::from_millis(59_900);
        assert!(!e.refresh_early(early, 1.0, 0.5));
        assert!(e.refresh_early(late, 1.0, 0.5));
        assert!(!e.refresh_early(late, 0.0, 0.5), "β = 0 is off");
    }

    #[test]
    fn a_failure_fails_over_to_the_value_for_the_negative_window_at_most() {
        let value = entry(1, 0, 10);
        let now = value.stored_at + Duration::from_secs(2); // stale, 9 s of stale-if-error left
        let policy = Freshness::fresh_for(Duration::from_secs(1));
        let failed = |negative| {
            StoredEntry::failed_over(FencingToken::new(43), Duration::ZERO, negative, &value, now)
        };
        let short = failed(Duration::from_secs(5));
        assert_eq!(
            (short.fresh, short.keep_for()),
            (Duration::from_secs(5), Duration::from_secs(9))
        );
        let long = failed(Duration::from_secs(60));
        assert_eq!(
            (long.fresh, long.keep_for()),
            (Duration::from_secs(9), Duration::from_secs(9))
        );
        let decoded = StoredEntry::decode(&short.encode()).unwrap();
        assert_eq!(decoded.kind, Kind::FailedOver);
        let mut kept = decoded.value().unwrap();
        kept.stored_at = value.stored_at;
        assert_eq!(kept, value);
        let pass = StoredEntry::new(
            Kind::Pass,
            FencingToken::new(1),
            Duration::ZERO,
            &policy,
            Vec::new(),
        );
        assert_eq!(pass.value(), None);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"no newline",
            b"lc1 V 1 2\n",
            b"lc2 V 1 2 3 4 5 6\n",
            b"lc1 X 1 2 3 4 5 6\n",
            b"lc1 V a 2 3 4 5 6\n",
            b"\xff\xfe\n",
        ] {
            assert!(StoredEntry::decode(bad).is_err(), "{bad:?}");
        }
    }
}
