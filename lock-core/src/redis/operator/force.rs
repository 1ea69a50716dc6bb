//! Releasing a holder by force: one script per kind of key, which ends the lease, raises the
//! fencing token, appends the audit record and moves the queue on, all at once. The script
//! tells the holder's backend on its wake channel, which on one server it always hears; on a
//! Redis Cluster the holder hears its wake channel of a key only while it waits on it, so the
//! revocation is then also `SPUBLISH`ed to the holder's revocation channel
//! (`shard_wakeups.rs`), which it hears from its start.

use std::time::SystemTime;

use redis::Value;

use super::super::keys::{LockKeys, AUDIT};
use super::super::primitive_keys::PrimitiveKeys;
use super::super::script_call::ScriptCall;
use super::super::shard_wakeups::revocation_channel;
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
        // The key the revocation names: the lock's, or the primitive's leases hash.
        let revoked_key;
        let call = match family {
            None => {
                let keys = LockKeys::new(&self.shared.prefix, full);
                revoked_key = keys.lock.to_string();
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
                revoked_key = keys.leases.clone();
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
        let (old_kind, old_label, at, old_client) = match family {
            None => {
                let record = text(4);
                let record = record.as_deref().and_then(HolderRecord::parse);
                let label = record.as_ref().map(|r| HolderLabel::from_stored(r.label));
                let client = record.map(|r| r.client.to_owned());
                (LeaseKind::Exclusive, label, number(5), client)
            }
            Some(family) => {
                let count = number(5).and_then(|c| u32::try_from(c).ok()).unwrap_or(1);
                let code = text(4).unwrap_or_default();
                let kind = kind_of(family, &code, count).unwrap_or(LeaseKind::Fair);
                let label = text(7)
                    .filter(|l| !l.is_empty())
                    .map(|l| HolderLabel::from_stored(&l));
                (kind, label, number(6), text(8))
            }
        };
        if let Some(client) = old_client.filter(|c| !c.is_empty()) {
            let owner = text(1).unwrap_or_default();
            self.push_revocation(&client, &owner, &request, &revoked_key)
                .await;
        }
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

    /// On a Redis Cluster, tells the backend of `client` that its lease of `revoked_key` held
    /// by `owner` was released by force: the script's own message went to the holder's wake
    /// channel of the key, which it hears only while it waits on the key, so the same message
    /// goes to its revocation channel, which it hears from its start. On one server (and
    /// under Sentinel) the script's message reached it; nothing more is sent.
    ///
    /// The release is done and audited whatever happens here: a failed publish is logged, and
    /// the holder still learns at its next renewal.
    async fn push_revocation(
        &self,
        client: &str,
        owner: &str,
        request: &ForceRelease<'_>,
        revoked_key: &str,
    ) {
        if self.shared.shards.is_none() {
            return;
        }
        let channel = revocation_channel(&self.shared.prefix, client);
        let message = format!(
            "!revoke\n{owner}\n{}\n{}\n{revoked_key}",
            request.operator, request.reason
        );
        let mut command = redis::cmd("SPUBLISH");
        command.arg(&channel).arg(message);
        match self.query::<u64>(&command).await {
            Ok(0) => tracing::debug!(
                %channel,
                "no backend heard a revocation: its holder is gone, or learns at its next renewal"
            ),
            Ok(_) => {}
            Err(error) => tracing::debug!(
                %error,
                %channel,
                "pushing a revocation failed; its holder learns at its next renewal"
            ),
        }
    }
}
