//! The operator's view of the memory backend ([`OperatorBackend`]): inspection and listing
//! read the key states under their mutex, a forced release changes one under it, and the audit
//! records are kept in memory until their retention ends.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use tokio::time::Instant;

use super::state::{Family, KeyState};
use super::MemoryBackend;
use crate::backend::{
    AuditRecord, ForceRelease, HolderView, InspectionPage, KeyInspection, KeyStatus, ListCursor,
    ListRequest, OperatorBackend, PermitUse, Primitive, WaiterView, Waiters,
};
use crate::sync::lock;
use crate::{FencingToken, LockError, LockKey, LostReason, Result};

/// The most audit records kept at once; the oldest go first past it.
const MAX_KEPT: usize = 10_000;

/// One audit record and when it goes.
pub(super) struct Kept {
    until: Instant,
    record: AuditRecord,
}

impl MemoryBackend {
    /// The inspection of one key state (expired leases dropped first).
    fn inspection(&self, family: Family, full_key: &str, state: &KeyState) -> KeyInspection {
        let now = Instant::now();
        let holders = state
            .holders
            .iter()
            .map(|h| {
                let mut view = HolderView::new(h.kind, h.owner, FencingToken::new(h.fence));
                view.label = h.label.clone();
                view.acquired_at = Some(h.acquired_at);
                view.lease_left = Some(h.expires_at.saturating_duration_since(now));
                view
            })
            .collect();
        let waiters = state
            .waiters
            .iter()
            .map(|w| {
                let mut view = WaiterView::new(Some(w.kind));
                view.label = w.label.clone();
                view.waiting_for = Some(now.saturating_duration_since(w.since));
                view
            })
            .collect();
        let seen = KeyInspection::new(
            family.primitive(),
            full_key,
            holders,
            Waiters::Listed(waiters),
        );
        if family == Family::Semaphore {
            let size = lock(&self.shared.sizes).get(full_key).copied();
            seen.with_permits(PermitUse::new(size, state.permits_held()))
        } else {
            seen
        }
    }

    /// The inspection of the latch `full_key`: its count, and as many waiters as wait on it
    /// (the memory backend keeps no label for them).
    fn latch_inspection(&self, full_key: &str) -> KeyInspection {
        let (count, waiting) = self.shared.latches.inspect(full_key).unzip();
        let waiters = vec![WaiterView::new(None); waiting.unwrap_or(0)];
        KeyInspection::latch(full_key, count, Waiters::Listed(waiters))
    }

    /// Drops records past their retention.
    fn prune_audit(audit: &mut VecDeque<Kept>, now: Instant) {
        audit.retain(|kept| kept.until > now);
    }
}

impl OperatorBackend for MemoryBackend {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        let Some(family) = Family::of_primitive(primitive) else {
            return Ok(self.latch_inspection(key.full()));
        };
        let mut keys = lock(&self.shared.keys);
        let slot = (family, key.full().to_owned());
        let Some(state) = keys.get_mut(&slot) else {
            return Ok(self.inspection(family, key.full(), &KeyState::default()));
        };
        if state.expire(Instant::now()) {
            state.wake_front();
        }
        Ok(self.inspection(family, key.full(), state))
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        // Keys in (key, primitive) order; the cursor is the last one given.
        let after = request
            .cursor
            .map(|c| parse_cursor(c.as_str()))
            .transpose()?;
        let mut keys = lock(&self.shared.keys);
        let now = Instant::now();
        let latches = self.shared.latches.names(request.prefix);
        let mut found: Vec<(String, Primitive, Option<Family>)> = keys
            .iter_mut()
            .filter(|((_, full), _)| full.starts_with(request.prefix))
            .filter_map(|((family, full), state)| {
                if state.expire(now) {
                    state.wake_front();
                }
                (!state.is_idle()).then(|| (full.clone(), family.primitive(), Some(*family)))
            })
            .chain(
                latches
                    .into_iter()
                    .map(|full| (full, Primitive::Latch, None)),
            )
            .filter(|(full, primitive, _)| {
                after
                    .as_ref()
                    .is_none_or(|(k, p)| (full.as_str(), *primitive) > (k.as_str(), *p))
            })
            .collect();
        found.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let more = found.len() > request.limit;
        found.truncate(request.limit);
        let next = more.then(|| {
            let (full, primitive, _) = found.last().expect("a page of at least one");
            ListCursor::new(format!("{}:{full}", primitive.name()))
        });
        let inspected = found
            .iter()
            .map(|(full, _, family)| match family {
                Some(family) => self.inspection(*family, full, &keys[&(*family, full.clone())]),
                None => self.latch_inspection(full),
            })
            .filter(|seen| seen.status != KeyStatus::Free)
            .collect();
        Ok(InspectionPage::new(inspected, next))
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        let Some(family) = Family::of_primitive(request.primitive) else {
            return Err(request.refused("it has no holder to release"));
        };
        let slot = (family, request.key.full().to_owned());
        let mut keys = lock(&self.shared.keys);
        let Some(state) = keys.get_mut(&slot) else {
            return Err(request.refused("it is free"));
        };
        let now = Instant::now();
        if state.expire(now) {
            state.wake_front();
        }
        let owners: Vec<_> = state.holders.iter().map(|h| h.owner).collect();
        let index = request.chosen(&owners)?;
        let holder = state.holders.remove(index);
        // The token the release takes: every later grant's is larger.
        let new_token = self.shared.fences.fetch_add(1, Ordering::Relaxed) + 1;
        holder.loss.fire(LostReason::Revoked {
            operator: request.operator.to_owned(),
            reason: request.reason.to_owned(),
        });
        state.wake_front();
        if state.is_idle() {
            keys.remove(&slot);
        }
        drop(keys);
        if family == Family::Leader {
            self.shared.elections.notify_waiters();
        }
        let record = AuditRecord {
            at: SystemTime::now(),
            key: request.key.full().to_owned(),
            primitive: request.primitive,
            operator: request.operator.to_owned(),
            reason: request.reason.to_owned(),
            old_owner: holder.owner,
            old_kind: holder.kind,
            old_label: holder.label,
            old_token: FencingToken::new(holder.fence),
            new_token: FencingToken::new(new_token),
        };
        let mut audit = lock(&self.shared.audit);
        Self::prune_audit(&mut audit, now);
        if audit.len() >= MAX_KEPT {
            audit.pop_front();
        }
        audit.push_back(Kept {
            until: now + request.retention,
            record: record.clone(),
        });
        Ok(record)
    }

    async fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let mut audit = lock(&self.shared.audit);
        Self::prune_audit(&mut audit, Instant::now());
        Ok(audit
            .iter()
            .rev()
            .map(|kept| &kept.record)
            .filter(|r| match key {
                Some(key) => r.key == key.full(),
                None => r.key.starts_with(prefix),
            })
            .take(limit)
            .cloned()
            .collect())
    }
}

/// `<primitive>:<full key>`, as `list` hands it out.
fn parse_cursor(text: &str) -> Result<(String, Primitive)> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let (primitive, full) = text.split_once(':').ok_or_else(bad)?;
    let primitive = primitive.parse::<Primitive>().map_err(|_| bad())?;
    Ok((full.to_owned(), primitive))
}
