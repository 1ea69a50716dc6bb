//! The audit trail: one persistent sequential node per forced release, `r-<owner>-<sequence>`,
//! in the key's audit directory `<root>/%audit/<encoded key>` (containers both, which
//! ZooKeeper removes once empty; `%audit` is no key's name, a key's `%` being always encoded),
//! created in the transaction that deletes the holder's node. The record's `czxid` is that
//! transaction's zxid, the token the release took, and its `ctime` the time of the release
//! (the server's clock); its data holds the rest as lines (see [`encode`]).
//!
//! # Retention
//! ZooKeeper's TTL nodes need `extendedTypesEnabled`, which the stack's `zoo.cfg` (and a
//! default server) does not set, so a record holds how long it is kept, and expired records
//! are deleted as they are come across: each forced release deletes the expired records of
//! its key among the oldest [`PRUNE_BATCH`], and those past [`MAX_KEPT_PER_KEY`]; each read of a
//! key's records deletes the expired ones it read. Expired records are never returned. A key
//! never released by force again, nor read, keeps its expired records until then.

use std::time::{Duration, SystemTime};

use zookeeper_client as zk;

use super::inspect::{unix_ms, SeenNode};
use crate::backend::{AuditRecord, ForceRelease, HolderLabel, LeaseKind, Primitive};
use crate::zookeeper::path::{decode_component, encode_component, sequence};
use crate::zookeeper::session::Session;
use crate::zookeeper::{to_lock_error, ZooKeeperBackend};
use crate::{FencingToken, OwnerToken, Result};

/// The child of the root that holds the audit directories.
const AUDIT_DIR: &str = "%audit";
/// What a record's name starts with (then the owner token, `-` and the sequence).
const RECORD: &str = "r-";
/// The first line of a record: its format.
const FORMAT: &str = "lock-core audit 1";
/// The most records kept per key; the oldest go first past it.
const MAX_KEPT_PER_KEY: usize = 1_000;
/// The most records one forced release looks at (and may delete) when pruning.
const PRUNE_BATCH: usize = 32;
/// The most keys one reading of a whole prefix visits.
const MAX_AUDITED_KEYS: usize = 10_000;
/// Records read per multi-read.
const READ_CHUNK: usize = 200;

impl ZooKeeperBackend {
    /// The directory of the audit records of the key `full`.
    pub(in crate::zookeeper) fn audit_dir(&self, full: &str) -> String {
        format!("{}/{}", self.audit_root(), encode_component(full))
    }

    fn audit_root(&self) -> String {
        format!("{}/{AUDIT_DIR}", self.shared.root)
    }

    /// The records of the key `full`, newest first, at most `limit`.
    pub(super) async fn records_of(
        &self,
        session: &Session,
        full: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let dir = self.audit_dir(full);
        let mut names = self.records_in(session, &dir).await?;
        names.reverse();
        names.truncate(limit);
        let (records, expired) = self.read_records(session, &dir, &names).await?;
        self.delete_records(session, &dir, &expired).await;
        Ok(records)
    }

    /// The records of every key starting with `prefix`, newest first, at most `limit`: the
    /// audit directories listed (at most [`MAX_AUDITED_KEYS`]), each read.
    pub(super) async fn records_under(
        &self,
        session: &Session,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let root = self.audit_root();
        let mut keys: Vec<String> = self
            .children(session, &root)
            .await?
            .iter()
            .filter_map(|name| decode_component(name))
            .filter(|full| full.starts_with(prefix))
            .collect();
        keys.sort();
        keys.truncate(MAX_AUDITED_KEYS);
        let mut records = Vec::new();
        for full in keys {
            records.extend(self.records_of(session, &full, limit).await?);
        }
        records.sort_by_key(|r| std::cmp::Reverse((r.at, r.new_token)));
        records.truncate(limit);
        Ok(records)
    }

    /// The record names in `dir`, oldest first.
    async fn records_in(&self, session: &Session, dir: &str) -> Result<Vec<String>> {
        let mut names: Vec<String> = self
            .children(session, dir)
            .await?
            .into_iter()
            .filter(|name| name.starts_with(RECORD) && sequence(name).is_some())
            .collect();
        names.sort_by_key(|name| sequence(name));
        Ok(names)
    }

    /// Reads the records `names` of `dir`: those kept, in the order given, and the names of
    /// the expired ones.
    async fn read_records(
        &self,
        session: &Session,
        dir: &str,
        names: &[String],
    ) -> Result<(Vec<AuditRecord>, Vec<String>)> {
        let now = SystemTime::now();
        let (mut records, mut expired) = (Vec::new(), Vec::new());
        for chunk in names.chunks(READ_CHUNK) {
            let paths: Vec<String> = chunk.iter().map(|name| format!("{dir}/{name}")).collect();
            let (client, paths) = (&session.client, paths.as_slice());
            let results = self
                .retry(|| async move {
                    let mut reader = client.new_multi_reader();
                    for path in paths {
                        reader.add_get_data(path)?;
                    }
                    reader.commit().await
                })
                .await
                .map_err(to_lock_error)?;
            for (name, result) in chunk.iter().zip(results) {
                let zk::MultiReadResult::Data { data, stat } = result else {
                    continue;
                };
                match decode(&data, &stat) {
                    Some((_, Some(until))) if until <= now => expired.push(name.clone()),
                    Some((record, _)) => records.push(record),
                    // Written by hand or by a later version: skipped, the others are still
                    // worth reading.
                    None => {}
                }
            }
        }
        Ok((records, expired))
    }

    /// Deletes records of `dir`, quietly (the next pass tries again).
    async fn delete_records(&self, session: &Session, dir: &str, names: &[String]) {
        for name in names {
            let path = format!("{dir}/{name}");
            match session.client.delete(&path, None).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(error) => {
                    tracing::debug!(path, %error, "deleting an expired audit record failed");
                    return;
                }
            }
        }
    }

    /// Deletes the expired records of `dir` among its oldest [`PRUNE_BATCH`], and the oldest
    /// past [`MAX_KEPT_PER_KEY`]. Quiet: a failure leaves them for the next pass.
    pub(super) async fn prune_records(&self, session: &Session, dir: &str) {
        let Ok(names) = self.records_in(session, dir).await else {
            return;
        };
        let surplus = names.len().saturating_sub(MAX_KEPT_PER_KEY);
        let mut doomed: Vec<String> = names.iter().take(surplus).cloned().collect();
        let oldest = &names[surplus..names.len().min(surplus + PRUNE_BATCH)];
        if let Ok((_, expired)) = self.read_records(session, dir, oldest).await {
            doomed.extend(expired);
        }
        self.delete_records(session, dir, &doomed).await;
    }
}

/// The record of the forced release of `owner`'s lease, if the audit directory `dir` holds
/// one: read by the holder's watch and by [`OperatorBackend::revocation`], one listing and one
/// read, each sent once.
///
/// [`OperatorBackend::revocation`]: crate::backend::OperatorBackend::revocation
pub(in crate::zookeeper) async fn find_revocation(
    client: &zk::Client,
    dir: &str,
    owner: OwnerToken,
) -> Result<Option<AuditRecord>> {
    let prefix = record_prefix(owner);
    let children = match client.list_children(dir).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => return Ok(None),
        Err(error) => return Err(to_lock_error(error)),
    };
    let Some(name) = children.into_iter().find(|name| name.starts_with(&prefix)) else {
        return Ok(None);
    };
    match client.get_data(&format!("{dir}/{name}")).await {
        Ok((data, stat)) => Ok(decode(&data, &stat).map(|(record, _)| record)),
        Err(zk::Error::NoNode) => Ok(None),
        Err(error) => Err(to_lock_error(error)),
    }
}

/// The name (before the sequence) of the record of a release of `owner`'s lease.
pub(super) fn record_prefix(owner: OwnerToken) -> String {
    format!("{RECORD}{}-", owner.to_hex())
}

/// A record's data: [`FORMAT`], then `name value` lines: `key`, `primitive`, `kind` (`x`, `f`,
/// `r`, `w`, `l` or `p<count>`), `owner`, `old` (its token), `operator`, `reason`, `keep`
/// (the retention in ms) and `label`. Text values have `%`, line feeds and carriage returns
/// percent-encoded.
pub(super) fn encode(request: &ForceRelease<'_>, holder: &SeenNode, old: FencingToken) -> Vec<u8> {
    let mut out = String::from(FORMAT);
    let mut line = |name: &str, value: &str| {
        out.push('\n');
        out.push_str(name);
        out.push(' ');
        out.push_str(value);
    };
    line("key", &escape(request.key.full()));
    line("primitive", request.primitive.name());
    line("kind", &kind_code(holder.kind));
    line("owner", &holder.owner.to_hex());
    line("old", &old.get().to_string());
    line("operator", &escape(request.operator));
    line("reason", &escape(request.reason));
    let keep = u64::try_from(request.retention.as_millis()).unwrap_or(u64::MAX);
    line("keep", &keep.to_string());
    if let Some(label) = holder.label.as_ref().filter(|l| !l.is_empty()) {
        line("label", &escape(label.as_stored()));
    }
    out.into_bytes()
}

/// A record read back with its stat, and until when it is kept (`None`: past what a
/// `SystemTime` holds); `None` for data that is not a record of this format.
fn decode(data: &[u8], stat: &zk::Stat) -> Option<(AuditRecord, Option<SystemTime>)> {
    let text = std::str::from_utf8(data).ok()?;
    let mut lines = text.split('\n');
    if lines.next()? != FORMAT {
        return None;
    }
    let fields: std::collections::HashMap<&str, &str> =
        lines.filter_map(|line| line.split_once(' ')).collect();
    let get = |name: &str| fields.get(name).copied();
    let at = unix_ms(stat.ctime);
    let keep = Duration::from_millis(get("keep")?.parse().ok()?);
    let record = AuditRecord {
        at,
        key: unescape(get("key")?),
        primitive: get("primitive")?.parse::<Primitive>().ok()?,
        operator: unescape(get("operator")?),
        reason: unescape(get("reason")?),
        old_owner: OwnerToken::from_hex(get("owner")?)?,
        old_kind: kind_of_code(get("kind")?)?,
        old_label: get("label").map(|label| HolderLabel::from_stored(&unescape(label))),
        old_token: FencingToken::new(get("old")?.parse().ok()?),
        new_token: FencingToken::new(u64::try_from(stat.czxid).ok()?),
    };
    Some((record, at.checked_add(keep)))
}

fn kind_code(kind: LeaseKind) -> String {
    match kind {
        LeaseKind::Fair => "f".into(),
        LeaseKind::Read => "r".into(),
        LeaseKind::Write => "w".into(),
        LeaseKind::Leader => "l".into(),
        LeaseKind::Permits { count, .. } => format!("p{count}"),
        LeaseKind::Exclusive => "x".into(),
    }
}

fn kind_of_code(code: &str) -> Option<LeaseKind> {
    Some(match code {
        "x" => LeaseKind::Exclusive,
        "f" => LeaseKind::Fair,
        "r" => LeaseKind::Read,
        "w" => LeaseKind::Write,
        "l" => LeaseKind::Leader,
        _ => {
            let count = code.strip_prefix('p')?.parse().ok()?;
            LeaseKind::Permits {
                count,
                limit: count,
            }
        }
    })
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escaped = rest.get(at..at + 3);
        match escaped {
            Some("%25") => out.push('%'),
            Some("%0A") => out.push('\n'),
            Some("%0D") => out.push('\r'),
            _ => {
                out.push('%');
                rest = &rest[at + 1..];
                continue;
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for text in [
            "plain",
            "a%b",
            "two\nlines\r",
            "%0A",
            "%",
            "%%25",
            "库存 %2",
        ] {
            assert_eq!(unescape(&escape(text)), text, "{text:?}");
            assert!(!escape(text).contains('\n'));
        }
        for kind in [
            LeaseKind::Exclusive,
            LeaseKind::Fair,
            LeaseKind::Read,
            LeaseKind::Write,
            LeaseKind::Leader,
            LeaseKind::Permits { count: 3, limit: 3 },
        ] {
            assert_eq!(kind_of_code(&kind_code(kind)), Some(kind));
        }
        assert_eq!(kind_of_code("p"), None);
        assert_eq!(kind_of_code("q1"), None);
    }

    fn stat() -> zk::Stat {
        zk::Stat {
            czxid: 42,
            mzxid: 42,
            pzxid: 42,
            ctime: 1_700_000_000_000,
            mtime: 1_700_000_000_000,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        }
    }

    #[test]
    fn foreign_data_is_no_record() {
        let stat = stat();
        assert!(decode(b"", &stat).is_none());
        assert!(decode(b"lock-core audit 1\nkey k", &stat).is_none());
        assert!(decode(b"\xff", &stat).is_none());
    }
}
