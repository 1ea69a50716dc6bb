//! The audit trail: one persistent sequential node per forced release, `r-<owner>-<sequence>`,
//! in the key's audit directory `<root>/%audit/<encoded key>` (containers both, which
//! ZooKeeper removes once empty; `%audit` is no key's name, a key's `%` being always encoded),
//! created in the transaction that deletes the holder's node. The record's `czxid` is that
//! transaction's zxid, the token the release took, and its `ctime` the time of the release
//! (the server's clock); its data holds the rest as lines (see `record.rs`).
//!
//! # Retention
//! ZooKeeper's TTL nodes need `extendedTypesEnabled`, which the stack's `zoo.cfg` (and a
//! default server) does not set, so a record holds how long it is kept, and expired records
//! are deleted as they are come across: each forced release deletes the expired records of
//! its key among the oldest [`PRUNE_BATCH`], and those past [`MAX_KEPT_PER_KEY`]; each read of a
//! key's records deletes the expired ones it read. Expired records are never returned. A key
//! never released by force again, nor read, keeps its expired records until then.

use std::time::SystemTime;

use zookeeper_client as zk;

use super::record::decode;
use crate::backend::AuditRecord;
use crate::zookeeper::path::{decode_component, encode_component, sequence};
use crate::zookeeper::session::Session;
use crate::zookeeper::{to_lock_error, ZooKeeperBackend};
use crate::{OwnerToken, Result};

/// The child of the root that holds the audit directories.
const AUDIT_DIR: &str = "%audit";
/// What a record's name starts with (then the owner token, `-` and the sequence).
const RECORD: &str = "r-";
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
            let results = self.read_data(session, &paths).await?;
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
