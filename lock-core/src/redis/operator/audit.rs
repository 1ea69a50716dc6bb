//! Reading the audit trail: one stream per key (`<prefix>:{#<full key>}:audit`, in the key's
//! slot, so a forced release appends to it in the same script), trimmed to its retention.

use std::collections::HashMap;

use redis::Value;

use super::super::keys::{LockKeys, AUDIT};
use super::super::{protocol, to_lock_error, RedisBackend};
use super::inspect::{family_of, kind_of, unix_ms};
use super::store_key;
use crate::backend::{AuditRecord, HolderLabel, LeaseKind, Primitive};
use crate::{FencingToken, OwnerToken, Result};

/// The most audit streams one reading of a whole namespace visits.
const MAX_STREAMS: usize = 10_000;
/// Keys asked for per `SCAN` step.
const SCAN_COUNT: usize = 500;

impl RedisBackend {
    /// The records of the key `full`, newest first.
    pub(super) async fn audit_of(&self, full: &str, limit: usize) -> Result<Vec<AuditRecord>> {
        let stream = format!("{}{AUDIT}", LockKeys::new(&self.shared.prefix, full).lock);
        let mut command = redis::cmd("XREVRANGE");
        command
            .arg(&stream)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(limit);
        let entries: Value = self.query(&command).await?;
        parse_entries(&entries)
    }

    /// The records of every key under `full_prefix`, newest first: the streams found by
    /// `SCAN` on every primary (at most [`MAX_STREAMS`]), each read newest first.
    pub(super) async fn audit_under(
        &self,
        full_prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let pattern = store_key::audit_pattern(&self.shared.prefix, full_prefix);
        let connection = self.shared.connection.clone();
        let nodes = connection.scan_nodes().await.map_err(to_lock_error)?;
        let mut streams = Vec::new();
        'nodes: for node in &nodes {
            let mut cursor = 0_u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT)
                    .arg("TYPE")
                    .arg("stream");
                let (next, keys): (u64, Vec<String>) = connection
                    .query_node(node.as_ref(), &scan)
                    .await
                    .map_err(to_lock_error)?;
                streams.extend(
                    keys.into_iter()
                        .filter_map(|k| store_key::audit_key_of(&self.shared.prefix, &k)),
                );
                if streams.len() >= MAX_STREAMS {
                    break 'nodes;
                }
                cursor = next;
                if cursor == 0 {
                    break;
                }
            }
        }
        streams.sort();
        streams.dedup();
        let mut records = Vec::new();
        for full in streams {
            records.extend(self.audit_of(&full, limit).await?);
        }
        records.sort_by_key(|r| std::cmp::Reverse(r.at));
        records.truncate(limit);
        Ok(records)
    }
}

/// `XREVRANGE`'s reply: `[[id, [field, value, ...]], ...]`.
fn parse_entries(entries: &Value) -> Result<Vec<AuditRecord>> {
    let bad = || protocol(format!("an audit stream read answered {entries:?}"));
    let Value::Array(entries) = entries else {
        return Err(bad());
    };
    let mut records = Vec::with_capacity(entries.len());
    for entry in entries {
        let Value::Array(parts) = entry else {
            return Err(bad());
        };
        let Some(Value::Array(pairs)) = parts.get(1) else {
            return Err(bad());
        };
        let mut fields = HashMap::new();
        for pair in pairs.chunks(2) {
            let [name, value] = pair else { continue };
            let (Ok(name), Ok(value)) = (
                redis::from_redis_value_ref::<String>(name),
                redis::from_redis_value_ref::<String>(value),
            ) else {
                continue;
            };
            fields.insert(name, value);
        }
        // A record that does not parse (written by hand, or by a later version) is skipped,
        // not an error: the others are still worth reading.
        if let Some(record) = record_of(&fields) {
            records.push(record);
        }
    }
    Ok(records)
}

fn record_of(fields: &HashMap<String, String>) -> Option<AuditRecord> {
    let get = |name: &str| fields.get(name).map(String::as_str);
    let primitive: Primitive = get("primitive")?.parse().ok()?;
    let count = get("permits").and_then(|c| c.parse().ok()).unwrap_or(1);
    let old_kind = match (family_of(primitive), get("kind")?) {
        (None, _) => LeaseKind::Exclusive,
        (Some(family), code) => kind_of(family, code, count)?,
    };
    let label = get("label").unwrap_or_default();
    Some(AuditRecord {
        at: unix_ms(get("at")?.parse().ok()?),
        key: get("key")?.to_owned(),
        primitive,
        operator: get("operator")?.to_owned(),
        reason: get("reason")?.to_owned(),
        old_owner: OwnerToken::from_hex(get("owner")?)?,
        old_kind,
        old_label: (!label.is_empty()).then(|| HolderLabel::from_stored(label)),
        old_token: FencingToken::new(get("old")?.parse().ok()?),
        new_token: FencingToken::new(get("new")?.parse().ok()?),
    })
}
