//! An audit record's node on ZooKeeper: its data the record's text (`backend/audit_text.rs`,
//! with its retention), its stat the time and token of the release.

use std::time::SystemTime;

use zookeeper_client as zk;

use super::inspect::{unix_ms, SeenNode};
use crate::backend::audit_text::StoredAudit;
use crate::backend::{AuditRecord, ForceRelease};
use crate::FencingToken;

/// What the record of `request` releasing `holder` (whose token was `old`) keeps in its
/// node's data: with its retention (ZooKeeper expires no node by itself).
pub(super) fn stored(
    request: &ForceRelease<'_>,
    holder: &SeenNode,
    old: FencingToken,
) -> StoredAudit {
    StoredAudit::of_release(
        request,
        holder.owner,
        holder.kind,
        holder.label.clone(),
        old,
    )
    .kept_for(request.retention)
}

/// A record read back with its stat (see `backend/audit_text.rs`: its time is the node's
/// `ctime`, its token the node's `czxid`), and until when it is kept (`None`: past what a
/// `SystemTime` holds); `None` for data that is not a record of this format.
pub(super) fn decode(data: &[u8], stat: &zk::Stat) -> Option<(AuditRecord, Option<SystemTime>)> {
    let stored = StoredAudit::decode(data)?;
    let at = unix_ms(stat.ctime);
    let keep = stored.keep()?;
    let record = stored.into_record(at, FencingToken::new(u64::try_from(stat.czxid).ok()?));
    Some((record, at.checked_add(keep)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::{HolderLabel, LeaseKind, Primitive};
    use crate::OwnerToken;

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
    fn a_record_round_trips() {
        let key = crate::LockKey::new("ns", "order\n%42").unwrap();
        let request = ForceRelease::new(&key, Primitive::Semaphore, "ops", "stuck 100%")
            .unwrap()
            .retained_for(Duration::from_secs(60));
        let label = HolderLabel::empty().with("host", "web-3").unwrap();
        let owner = OwnerToken::from_hex(&"ab".repeat(16)).unwrap();
        let holder = SeenNode {
            path: "/locks/ns:order%0A%2542%semaphore/x".into(),
            kind: LeaseKind::Permits { count: 2, limit: 2 },
            owner,
            holds: true,
            stat: stat(),
            label: Some(label.clone()),
        };
        let data = stored(&request, &holder, FencingToken::new(7)).encode();
        let (record, until) = decode(data.as_bytes(), &stat()).unwrap();
        assert_eq!(record.key, "ns:order\n%42");
        assert_eq!(record.primitive, Primitive::Semaphore);
        assert_eq!(record.old_kind, LeaseKind::Permits { count: 2, limit: 2 });
        assert_eq!(record.old_owner, owner);
        assert_eq!(record.old_label, Some(label));
        assert_eq!(record.old_token, FencingToken::new(7));
        assert_eq!(
            record.new_token,
            FencingToken::new(42),
            "the record's czxid"
        );
        assert_eq!(
            (record.operator.as_str(), record.reason.as_str()),
            ("ops", "stuck 100%")
        );
        assert_eq!(until, Some(record.at + Duration::from_secs(60)));
    }

    #[test]
    fn foreign_data_is_no_record() {
        let stat = stat();
        assert!(decode(b"", &stat).is_none());
        assert!(decode(b"lock-core audit 1\nkey k", &stat).is_none());
        assert!(decode(b"\xff", &stat).is_none());
    }
}
