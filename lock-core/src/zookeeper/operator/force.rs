//! Releasing a holder by force: one transaction deletes its node, guarded by the node's
//! version as read (the node's path holds its unique sequence, so that is its identity and
//! state), writes the primitive's directory (which makes every later grant's fencing token
//! larger than the release's, see `fence.rs`) and creates the audit record. All or nothing:
//! a holder that went or changed since the read fails the transaction, which is read and
//! decided again.

use zookeeper_client as zk;

use super::audit::record_prefix;
use super::inspect::{token_of, unix_ms, SeenNode};
use super::record::stored;
use crate::backend::{check_lease_retention, AuditRecord, ForceRelease};
use crate::zookeeper::session::Session;
use crate::zookeeper::{to_lock_error, ZooKeeperBackend, BACKEND};
use crate::{LockError, Result};

/// How many times a release reads and tries again when the holders changed under it.
const ATTEMPTS: usize = 5;

impl ZooKeeperBackend {
    pub(super) async fn force_release_holder(
        &self,
        request: ForceRelease<'_>,
    ) -> Result<AuditRecord> {
        check_lease_retention(request.retention, "")?;
        let session = self.session().await?;
        let full = request.key.full();
        let audit_dir = self.audit_dir(full);
        let mut lost_replies = 0;
        for _ in 0..ATTEMPTS {
            let seen = self.read_queue(&session, request.primitive, full).await?;
            let holders: Vec<&SeenNode> = seen.holders().collect();
            let owners: Vec<_> = holders.iter().map(|holder| holder.owner).collect();
            let holder = holders[request.chosen(&owners)?];
            let old = token_of(&holder.stat);
            let audit = stored(&request, holder, old);
            let record = audit.encode().into_bytes();
            let prefix = format!("{audit_dir}/{}", record_prefix(holder.owner));
            let mut transaction = session.client.new_multi_writer();
            let persistent = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
            transaction
                .add_delete(&holder.path, Some(holder.stat.version))
                .and_then(|()| transaction.add_set_data(&seen.dir, &[], None))
                .and_then(|()| transaction.add_create(&prefix, &record, &persistent))
                .map_err(to_lock_error)?;
            match transaction.commit().await {
                Ok(results) => {
                    let written = results.into_iter().find_map(|result| match result {
                        zk::MultiWriteResult::SetData { stat } => Some(stat),
                        _ => None,
                    });
                    let written = written.ok_or_else(|| LockError::Protocol {
                        backend: BACKEND,
                        detail: "a forced release's transaction answered without its write".into(),
                    })?;
                    self.prune_records(&session, &audit_dir).await;
                    return Ok(audit.into_record(unix_ms(written.mtime), token_of(&written)));
                }
                // The holder went or changed since the read: read again.
                Err(zk::MultiWriteError::OperationFailed {
                    index: 0,
                    source: zk::Error::NoNode | zk::Error::BadVersion,
                }) => {}
                // The audit directory does not exist yet (or was just reaped, being empty).
                Err(zk::MultiWriteError::OperationFailed {
                    index: 2,
                    source: zk::Error::NoNode,
                }) => {
                    let containers = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
                    match session.client.mkdir(&audit_dir, &containers).await {
                        Ok(()) | Err(zk::Error::NodeExists) => {}
                        Err(error) => return Err(to_lock_error(error)),
                    }
                }
                Err(error) => {
                    let error = zk::Error::from(error);
                    self.write_failed(&mut lost_replies, error).await?;
                    // The reply was lost: the release may have gone through.
                    if let Some(record) = self.released_already(&session, &request, holder).await {
                        return Ok(record);
                    }
                }
            }
        }
        Err(LockError::unavailable(
            BACKEND,
            format!(
                "the holders of {:?} kept changing while it was being released by force; try again",
                request.key.name()
            ),
        ))
    }

    /// After a lost reply: the record this very release wrote, if it went through.
    async fn released_already(
        &self,
        session: &Session,
        request: &ForceRelease<'_>,
        holder: &SeenNode,
    ) -> Option<AuditRecord> {
        let dir = self.audit_dir(request.key.full());
        let found = super::find_revocation(&session.client, &dir, holder.owner).await;
        let old = token_of(&holder.stat);
        found
            .ok()
            .flatten()
            .filter(|record| request.wrote(record, old))
    }
}
