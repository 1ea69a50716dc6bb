//! Releasing a holder by force: one script per kind of key, which ends the lease, raises the
//! fencing token, appends the audit record and moves the queue on, all at once.

use std::time::SystemTime;

use redis::Value;

use super::super::keys::{LockKeys, AUDIT};
use super::super::primitive_keys::PrimitiveKeys;
use super::super::script_call::ScriptCall;
use super::super::{millis, protocol, scripts, RedisBackend, FENCE_RETENTION};
use super::inspect::{family_of, kind_of, unix_ms, HolderRecord};
use crate::backend::{AuditRecord, ForceRelease, HolderLabel, LeaseKind};
use crate::{FencingToken, LockError, OwnerToken, Result};

impl RedisBackend {
    pub(super) async fn force_release_holder(
        &self,
        request: ForceRelease<'_>,
    ) -> Result<AuditRecord> {
        let full = request.key.full();
        let owner = request.owner.map(|o| o.to_hex()).unwrap_or_default();
        let family = family_of(request.primitive);
        let call = match family {
            None => {
                let keys = LockKeys::new(&self.shared.prefix, full);
                let mut call = ScriptCall::new(&scripts::FORCE_RELEASE, 4);
                call.key(&*keys.lock)
                    .key_from_parts(&keys.fence())
                    .key_from_parts(&keys.waiters())
                    .key_from_parts(&[&keys.lock, AUDIT])
                    .arg(&owner)
                    .arg(&self.shared.hub.route)
                    .arg(millis(FENCE_RETENTION))
                    .arg(millis(request.retention))
                    .arg(request.operator)
                    .arg(request.reason)
                    .arg(full);
                call
            }
            Some(family) => {
                let keys = PrimitiveKeys::new(&self.shared.prefix, family, full);
                let audit = format!("{}{AUDIT}", LockKeys::new(&self.shared.prefix, full).lock);
                let all = keys.all();
                let mut call = ScriptCall::new(&scripts::PRIMITIVE_FORCE_RELEASE, all.len() + 1);
                for key in all {
                    call.key(key);
                }
                call.key(&audit)
                    .arg(family.name())
                    .arg(&self.shared.hub.route)
                    .arg(millis(self.shared.config.claim_window))
                    .arg(millis(FENCE_RETENTION))
                    .arg(&owner)
                    .arg(millis(request.retention))
                    .arg(request.operator)
                    .arg(request.reason)
                    .arg(full)
                    .arg(request.primitive.name());
                call
            }
        };
        let reply: Vec<Value> = self.run("force release", &call).await?;
        let bad = || protocol(format!("a forced release answered {reply:?}"));
        let text = |i: usize| -> Option<String> {
            reply
                .get(i)
                .and_then(|v| redis::from_redis_value_ref(v).ok())
        };
        let number = |i: usize| -> Option<u64> { text(i).and_then(|t| t.parse().ok()) };
        if number(0) == Some(0) {
            let why = match text(1).as_deref() {
                Some("free") => "it is free".to_owned(),
                Some("not-owner") => "the owner named does not hold it".to_owned(),
                Some("several") => format!(
                    "{} hold it: name the holder to release",
                    number(2).unwrap_or(2)
                ),
                _ => return Err(bad()),
            };
            return Err(LockError::ForceReleaseRefused {
                key: request.key.name().to_owned(),
                reason: why,
            });
        }
        let old_owner = text(1)
            .and_then(|o| OwnerToken::from_hex(&o))
            .ok_or_else(bad)?;
        let old_token = number(2).ok_or_else(bad)?;
        let new_token = number(3).ok_or_else(bad)?;
        let (old_kind, old_label, at) = match family {
            None => {
                let record = text(4);
                let label = record
                    .as_deref()
                    .and_then(HolderRecord::parse)
                    .map(|r| HolderLabel::from_stored(r.label));
                (LeaseKind::Exclusive, label, number(5))
            }
            Some(family) => {
                let count = number(5).and_then(|c| u32::try_from(c).ok()).unwrap_or(1);
                let code = text(4).unwrap_or_default();
                let kind = kind_of(family, &code, count).unwrap_or(LeaseKind::Fair);
                let label = text(7)
                    .filter(|l| !l.is_empty())
                    .map(|l| HolderLabel::from_stored(&l));
                (kind, label, number(6))
            }
        };
        Ok(AuditRecord {
            at: at.map_or_else(SystemTime::now, unix_ms),
            key: full.to_owned(),
            primitive: request.primitive,
            operator: request.operator.to_owned(),
            reason: request.reason.to_owned(),
            old_owner,
            old_kind,
            old_label,
            old_token: FencingToken::new(old_token),
            new_token: FencingToken::new(new_token),
        })
    }
}
