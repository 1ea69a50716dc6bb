//! Reading one lock or primitive for the operator's view, in one read-only script.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;

use super::super::keys::LockKeys;
use super::super::primitive_keys::{Family, LatchKeys, PrimitiveKeys};
use super::super::script_call::ScriptCall;
use super::super::wakeups::label_of_waiter;
use super::super::{protocol, scripts, RedisBackend};
use super::MAX_WAITERS_LISTED;
use crate::backend::{
    HolderLabel, HolderView, KeyInspection, LatchCount, LeaseKind, PermitUse, Primitive,
    WaiterView, Waiters,
};
use crate::{FencingToken, OwnerToken, Result};

/// A lock's holder record, what its value carries after `<owner>:<fence>|` (`acquire.lua`):
/// `<client>|<unix ms>|<label>`.
pub(super) struct HolderRecord<'a> {
    /// The id of the holder's backend (`WakeHub::client_id`).
    pub(super) client: &'a str,
    pub(super) acquired_ms: Option<u64>,
    pub(super) label: &'a str,
}

impl<'a> HolderRecord<'a> {
    pub(super) fn parse(record: &'a str) -> Option<Self> {
        let mut parts = record.splitn(3, '|');
        let client = parts.next()?;
        Some(Self {
            client,
            acquired_ms: parts.next()?.parse().ok(),
            label: parts.next()?,
        })
    }
}

/// A time in unix milliseconds.
pub(super) fn unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// The primitive's family in the store; `None` for the lock (and the latch, which is kept
/// apart: [`LatchKeys`]).
pub(super) fn family_of(primitive: Primitive) -> Option<Family> {
    primitive.lease_kind().and_then(Family::of)
}

/// The lease kind of a primitive's one-letter code (`primitive_keys::kind_code`).
pub(super) fn kind_of(family: Family, code: &str, count: u32) -> Option<LeaseKind> {
    Some(match code {
        "R" => LeaseKind::Read,
        "W" => LeaseKind::Write,
        "P" => LeaseKind::Permits {
            count,
            limit: count,
        },
        "F" if family == Family::Leader => LeaseKind::Leader,
        "F" => LeaseKind::Fair,
        _ => return None,
    })
}

impl RedisBackend {
    /// Inspects the `primitive` whose full key is `full`.
    pub(super) async fn inspect_key(
        &self,
        primitive: Primitive,
        full: &str,
    ) -> Result<KeyInspection> {
        if primitive == Primitive::Latch {
            return self.inspect_latch(full).await;
        }
        match family_of(primitive) {
            None => self.inspect_lock(full).await,
            Some(family) => self.inspect_primitive(primitive, family, full).await,
        }
    }

    async fn inspect_lock(&self, full: &str) -> Result<KeyInspection> {
        let keys = LockKeys::new(&self.shared.prefix, full);
        let mut call = ScriptCall::new(&scripts::INSPECT_LOCK, 2);
        call.key(&*keys.lock)
            .key_from_parts(&keys.waiters())
            .arg(MAX_WAITERS_LISTED);
        type Reply = (Option<String>, i64, Vec<(String, f64)>, u64, u64);
        let (value, pttl, queued, _count, now_ms): Reply = self.run("inspect", &call).await?;
        let mut holders = Vec::new();
        // A value that is not `<owner>:<fence>[|<holder record>]` is not a lock's (another
        // store's entry under the same prefix): nothing holds this lock.
        let parsed = value.as_deref().and_then(|value| {
            let (lease, record) = value.split_once('|').unwrap_or((value, ""));
            let (owner, fence) = lease.split_once(':')?;
            let record = HolderRecord::parse(record);
            Some((
                OwnerToken::from_hex(owner)?,
                fence.parse::<u64>().ok()?,
                record,
            ))
        });
        if let Some((owner, fence, record)) = parsed {
            let mut view = HolderView::new(LeaseKind::Exclusive, owner, FencingToken::new(fence));
            view.lease_left = u64::try_from(pttl).ok().map(Duration::from_millis);
            if let Some(record) = record {
                view.label = Some(HolderLabel::from_stored(record.label));
                view.acquired_at = record.acquired_ms.map(unix_ms);
            }
            holders.push(view);
        }
        let waiters = queued
            .into_iter()
            .map(|(id, arrived)| {
                let mut view = WaiterView::new(Some(LeaseKind::Exclusive));
                view.label = label_of_waiter(&id).map(|l| HolderLabel::from_stored(&l));
                // Arrival times are the server's ms (`acquire.lua`); a waiter put back at the
                // front has an earlier one, so this is at least how long it has waited.
                view.waiting_for = Some(Duration::from_millis(
                    now_ms.saturating_sub(arrived.max(0.0) as u64),
                ));
                view
            })
            .collect();
        Ok(KeyInspection::new(
            Primitive::Lock,
            full,
            holders,
            Waiters::Listed(waiters),
        ))
    }

    /// A latch's count, time left and waiters: the same read as a lock's (a string and a
    /// sorted set of waiter ids by arrival), so the same script.
    async fn inspect_latch(&self, full: &str) -> Result<KeyInspection> {
        let keys = LatchKeys::new(&self.shared.prefix, full);
        let mut call = ScriptCall::new(&scripts::INSPECT_LOCK, 2);
        call.key(&keys.count)
            .key(&keys.waiters)
            .arg(MAX_WAITERS_LISTED);
        type Reply = (Option<String>, i64, Vec<(String, f64)>, u64, u64);
        let (value, pttl, queued, _count, now_ms): Reply = self.run("inspect", &call).await?;
        let count = value.and_then(|v| v.parse::<u64>().ok()).map(|count| {
            LatchCount::new(count, u64::try_from(pttl).ok().map(Duration::from_millis))
        });
        let waiters = queued
            .into_iter()
            .map(|(id, arrived)| {
                let mut view = WaiterView::new(None);
                view.label = label_of_waiter(&id).map(|l| HolderLabel::from_stored(&l));
                // Waiters of an older client registered with no arrival time (0).
                view.waiting_for = (arrived >= 1.0)
                    .then(|| Duration::from_millis(now_ms.saturating_sub(arrived as u64)));
                view
            })
            .collect();
        Ok(KeyInspection::latch(full, count, Waiters::Listed(waiters)))
    }

    async fn inspect_primitive(
        &self,
        primitive: Primitive,
        family: Family,
        full: &str,
    ) -> Result<KeyInspection> {
        let keys = PrimitiveKeys::new(&self.shared.prefix, family, full);
        let all = keys.all();
        let mut call = ScriptCall::new(&scripts::INSPECT_PRIMITIVE, all.len());
        for key in all {
            call.key(key);
        }
        call.arg(MAX_WAITERS_LISTED);
        let reply: Value = self.run("inspect", &call).await?;
        let bad = || protocol(format!("the inspection of {full:?} answered {reply:?}"));
        let Value::Array(parts) = &reply else {
            return Err(bad());
        };
        let [Value::Array(live), Value::Array(queue), _count, size, now] = parts.as_slice() else {
            return Err(bad());
        };
        let now_ms: u64 = redis::from_redis_value_ref(now).map_err(|_| bad())?;
        let size: Option<u32> = redis::from_redis_value_ref(size).map_err(|_| bad())?;
        let mut holders = Vec::new();
        let mut in_use = 0;
        for quad in live.chunks(4) {
            let [owner, expiry, record, who] = quad else {
                return Err(bad());
            };
            let who: String = redis::from_redis_value_ref(who).map_err(|_| bad())?;
            let owner: String = redis::from_redis_value_ref(owner).map_err(|_| bad())?;
            let expiry: f64 = redis::from_redis_value_ref(expiry).map_err(|_| bad())?;
            let record: String = redis::from_redis_value_ref(record).map_err(|_| bad())?;
            let (Some(owner), Some((fence, code, count))) =
                (OwnerToken::from_hex(&owner), parse_lease(&record))
            else {
                continue;
            };
            let Some(kind) = kind_of(family, code, count) else {
                continue;
            };
            if code == "P" {
                in_use += count;
            }
            let mut view = HolderView::new(kind, owner, FencingToken::new(fence));
            view.lease_left = Some(Duration::from_millis(
                (expiry.max(0.0) as u64).saturating_sub(now_ms),
            ));
            view.label = who
                .split_once('|')
                .map(|(_client, label)| HolderLabel::from_stored(label));
            holders.push(view);
        }
        // Queue entries are `<waiter id>|<owner>|<lease ms>`, by arrival sequence: the store
        // keeps neither their kind nor their time of arrival.
        let waiters = queue
            .iter()
            .map(|entry| {
                let mut view = WaiterView::new(None);
                let entry: Option<String> = redis::from_redis_value_ref(entry).ok();
                view.label = entry
                    .as_deref()
                    .and_then(|e| e.split('|').next())
                    .and_then(label_of_waiter)
                    .map(|l| HolderLabel::from_stored(&l));
                view
            })
            .collect();
        let seen = KeyInspection::new(primitive, full, holders, Waiters::Listed(waiters));
        Ok(if family == Family::Semaphore {
            seen.with_permits(PermitUse::new(size, in_use))
        } else {
            seen
        })
    }
}

/// A primitive's lease record, `"<fence> <kind> <count>"`.
fn parse_lease(record: &str) -> Option<(u64, &str, u32)> {
    let mut parts = record.split(' ');
    let fence = parts.next()?.parse().ok()?;
    let code = parts.next()?;
    let count = parts.next()?.parse().ok()?;
    Some((fence, code, count))
}
