//! Listing the keys held or waited on: the root's children in one `getChildren` (ZooKeeper has
//! no way to page a node's children; the read is bounded by the server's reply limit,
//! `jute.maxbuffer`, which bounds how many locks a root can have anyway), each named back to
//! its key and primitive (`<key>`, `<key>%fair`, `%rw`, `%semaphore`, `%leader`, `%latch`;
//! the audit directory skipped), sorted by key and primitive. A page goes on from the cursor
//! (the last key it looked at, `<primitive>:<key>`): the directories are looked at in
//! multi-reads of [`PEEK_CHUNK`] (an empty container, not yet reaped, or a semaphore with its
//! size alone holds nothing), and the non-empty ones inspected, until the page is full or
//! [`MAX_PEEKED`] directories were looked at (a page may then come back short, with a cursor).

use zookeeper_client as zk;

use crate::backend::{InspectionPage, KeyStatus, ListCursor, ListRequest, Primitive};
use crate::zookeeper::path::decode_component;
use crate::zookeeper::semaphore::SIZE_NODE;
use crate::zookeeper::{to_lock_error, ZooKeeperBackend};
use crate::{LockError, Result};

/// Directories looked at per multi-read.
const PEEK_CHUNK: usize = 100;
/// The most directories one page looks at.
const MAX_PEEKED: usize = 5_000;

/// The suffixes of the primitives' directories (`path.rs`), after the lock's path.
const SUFFIXES: [(&str, Primitive); 5] = [
    ("%fair", Primitive::Fair),
    ("%rw", Primitive::ReadWrite),
    ("%semaphore", Primitive::Semaphore),
    ("%leader", Primitive::Election),
    (crate::zookeeper::latch::LATCH_SUFFIX, Primitive::Latch),
];

/// One child of the root, named back.
struct Candidate {
    full: String,
    primitive: Primitive,
    name: String,
}

impl ZooKeeperBackend {
    pub(super) async fn list_keys(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        let after = request
            .cursor
            .map(|cursor| parse_cursor(cursor.as_str()))
            .transpose()?;
        let session = self.session().await?;
        let root = &self.shared.root;
        let mut candidates: Vec<Candidate> = self
            .children(&session, root)
            .await?
            .into_iter()
            .filter_map(|name| {
                let (full, primitive) = parse_child(&name)?;
                Some(Candidate {
                    full,
                    primitive,
                    name,
                })
            })
            .filter(|c| c.full.starts_with(request.prefix))
            .filter(|c| {
                after
                    .as_ref()
                    .is_none_or(|(p, k)| (c.full.as_str(), c.primitive) > (k.as_str(), *p))
            })
            .collect();
        candidates.sort_by(|a, b| (&a.full, a.primitive).cmp(&(&b.full, b.primitive)));
        let mut keys = Vec::new();
        let mut looked = 0;
        'chunks: for chunk in candidates.chunks(PEEK_CHUNK) {
            if looked >= MAX_PEEKED {
                break;
            }
            let paths: Vec<String> = chunk.iter().map(|c| format!("{root}/{}", c.name)).collect();
            let (client, paths) = (&session.client, paths.as_slice());
            let results = self
                .retry(|| async move {
                    let mut reader = client.new_multi_reader();
                    for path in paths {
                        reader.add_get_children(path)?;
                    }
                    reader.commit().await
                })
                .await
                .map_err(to_lock_error)?;
            for (candidate, result) in chunk.iter().zip(results) {
                looked += 1;
                if candidate.primitive == Primitive::Latch {
                    // A latch is one node, with no children: read it.
                    let seen = self.inspect_latch(&session, &candidate.full).await?;
                    if seen.status != KeyStatus::Free {
                        keys.push(seen);
                    }
                } else if matches!(result, zk::MultiReadResult::Children { children }
                    if children.iter().any(|child| child != SIZE_NODE))
                {
                    let seen = self
                        .read_queue(&session, candidate.primitive, &candidate.full)
                        .await?;
                    let seen = seen.inspection();
                    if seen.status != KeyStatus::Free {
                        keys.push(seen);
                    }
                }
                if keys.len() >= request.limit {
                    break 'chunks;
                }
            }
        }
        let next = candidates
            .get(looked.saturating_sub(1))
            .filter(|_| looked < candidates.len())
            .map(|last| ListCursor::new(format!("{}:{}", last.primitive.name(), last.full)));
        Ok(InspectionPage::new(keys, next))
    }
}

/// The key and primitive a child of the root is the directory (or latch node) of; `None` for
/// the others (the audit directory, anything not of this backend's making).
fn parse_child(name: &str) -> Option<(String, Primitive)> {
    let (stem, primitive) = SUFFIXES
        .iter()
        .find_map(|(suffix, primitive)| Some((name.strip_suffix(suffix)?, *primitive)))
        .unwrap_or((name, Primitive::Lock));
    decode_component(stem)
        .filter(|full| !full.is_empty())
        .map(|full| (full, primitive))
}

/// `<primitive>:<full key>`, as a page hands it out.
fn parse_cursor(text: &str) -> Result<(Primitive, String)> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let (primitive, full) = text.split_once(':').ok_or_else(bad)?;
    Ok((primitive.parse().map_err(|_| bad())?, full.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zookeeper::path::{encode_component, primitive_path};

    #[test]
    fn every_directory_names_its_key_and_primitive() {
        for full in ["ns:a", "ns:x%rw", "a/b", "..", "库存%fair"] {
            let lock = encode_component(full);
            assert_eq!(parse_child(&lock), Some((full.to_owned(), Primitive::Lock)));
            for (suffix, primitive) in SUFFIXES {
                let dir = primitive_path("/locks", full, suffix);
                let name = dir.strip_prefix("/locks/").unwrap();
                assert_eq!(parse_child(name), Some((full.to_owned(), primitive)));
            }
        }
        assert_eq!(parse_child("%audit"), None);
        assert_eq!(parse_child("%fair"), None);
        assert!(parse_cursor("lock:ns:a").is_ok());
        for bad in ["", "nope", "bogus:ns:a"] {
            assert!(parse_cursor(bad).is_err(), "{bad}");
        }
    }
}
