//! Listing the keys held or waited on: keys-only ranged reads with a limit over each
//! primitive's part of the keyspace under the prefix, in key order, from a start key. Each
//! queue found is inspected, and the next read starts past its range (so a long queue is not
//! read through). A page ends when it holds `limit` keys, or after [`MAX_STEPS`] reads (it may
//! then come back short, with a cursor). The cursor is `<segment>:<hex of the next start key>`.

use etcd_client as etcd;

use crate::backend::{InspectionPage, KeyStatus, ListCursor, ListRequest, Primitive};
use crate::etcd::keys::{decode_name, latch_key, queue_prefix};
use crate::etcd::EtcdBackend;
use crate::{LockError, Result};

/// Keys asked for per read.
const SCAN: i64 = 200;
/// The most reads one page makes.
const MAX_STEPS: usize = 50;

/// One part of the keyspace a listing walks: `[start, end)`, holding the queues of one
/// primitive whose range starts with `base` (`<prefix>/`, `<prefix>/~fair/`, ...).
struct Segment {
    primitive: Primitive,
    base: String,
    start: Vec<u8>,
    end: Vec<u8>,
}

impl EtcdBackend {
    pub(super) async fn list_keys(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        let segments = segments(&self.shared.prefix, request.prefix);
        let (mut segment, mut from) = match request.cursor {
            Some(cursor) => parse_cursor(cursor.as_str(), segments.len())?,
            None => (0, segments[0].start.clone()),
        };
        let mut keys = Vec::new();
        let mut steps = 0;
        while segment < segments.len() && keys.len() < request.limit && steps < MAX_STEPS {
            steps += 1;
            let part = &segments[segment];
            let options = etcd::GetOptions::new()
                .with_range(part.end.clone())
                .with_keys_only()
                .with_limit(SCAN);
            let reply = self
                .call("list", |mut c| {
                    let (from, options) = (from.clone(), options.clone());
                    async move { c.get(from, Some(options)).await }
                })
                .await?;
            let mut full_page = false;
            for kv in reply.kvs() {
                if kv.key() < from.as_slice() {
                    continue; // in a queue already inspected
                }
                let found = if part.primitive == Primitive::Latch {
                    latch_of(part, kv.key()).map(|full| (after_key(kv.key()), full))
                } else {
                    queue_of(part, kv.key())
                        .map(|(queue, full)| (prefix_end(queue.as_bytes()), full))
                };
                let Some((next, full)) = found else {
                    continue;
                };
                from = next;
                if !full.starts_with(request.prefix) {
                    continue;
                }
                let seen = if part.primitive == Primitive::Latch {
                    self.inspect_latch(&full).await?
                } else {
                    let seen = self.read_queue(part.primitive, &full).await?;
                    self.inspection(&seen).await
                };
                if seen.status != KeyStatus::Free {
                    keys.push(seen);
                }
                if keys.len() >= request.limit {
                    full_page = true;
                    break;
                }
            }
            if !full_page && !reply.more() {
                segment += 1;
                if let Some(next) = segments.get(segment) {
                    from = next.start.clone();
                }
            }
        }
        let next = (segment < segments.len())
            .then(|| ListCursor::new(format!("{segment}:{}", hex(&from))));
        Ok(InspectionPage::new(keys, next))
    }
}

/// The parts of the keyspace holding the queues of keys starting with `full_prefix`, in the
/// order a listing walks them.
fn segments(prefix: &str, full_prefix: &str) -> Vec<Segment> {
    let mut parts = Vec::new();
    for primitive in Primitive::LEASED {
        let Some(kind) = primitive.lease_kind() else {
            continue;
        };
        // `queue_prefix` of the key prefix, without the `/` that ends a whole name.
        let mut start = queue_prefix(prefix, kind, full_prefix);
        start.pop();
        let base = queue_prefix(prefix, kind, "");
        let base = base[..base.len() - 1].to_owned();
        let end = prefix_end(start.as_bytes());
        if primitive == Primitive::Lock && full_prefix.is_empty() {
            // Every other range (`~fair/`, ..., `~latch/`, `~audit/`) lies within the lock's
            // when no name is given: an encoded name never starts with `~`, so the lock's
            // queues are the keys before `<prefix>/~` and after `<prefix>/~` + 0xff.
            let mut marker = start.clone().into_bytes();
            marker.push(b'~');
            parts.push(Segment {
                primitive,
                base: base.clone(),
                start: start.clone().into_bytes(),
                end: marker.clone(),
            });
            parts.push(Segment {
                primitive,
                base,
                start: prefix_end(&marker),
                end,
            });
        } else {
            parts.push(Segment {
                primitive,
                base,
                start: start.into_bytes(),
                end,
            });
        }
    }
    // The latches: one key each, `<prefix>/~latch/<encoded name>`.
    let start = latch_key(prefix, full_prefix);
    let end = prefix_end(start.as_bytes());
    parts.push(Segment {
        primitive: Primitive::Latch,
        base: latch_key(prefix, ""),
        start: start.into_bytes(),
        end,
    });
    parts
}

/// The key of the latch whose etcd key is `key` (in the latches' `part`).
fn latch_of(part: &Segment, key: &[u8]) -> Option<String> {
    let name = key.strip_prefix(part.base.as_bytes())?;
    decode_name(name).filter(|full| !full.is_empty())
}

/// The first key after `key` itself.
fn after_key(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

/// The queue (its range, and its key) the etcd key `key` of `part` belongs to.
fn queue_of(part: &Segment, key: &[u8]) -> Option<(String, String)> {
    let rest = key.strip_prefix(part.base.as_bytes())?;
    let slash = rest.iter().position(|b| *b == b'/')?;
    let name = &rest[..slash];
    if name.first() == Some(&b'~') {
        return None; // another primitive's marker
    }
    let full = decode_name(name).filter(|full| !full.is_empty())?;
    let queue = std::str::from_utf8(&key[..part.base.len() + slash + 1]).ok()?;
    Some((queue.to_owned(), full))
}

/// The first key after every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Only 0xff bytes: every key after it.
    vec![0]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<segment>:<hex key>`, as a page hands it out.
fn parse_cursor(text: &str, segments: usize) -> Result<(usize, Vec<u8>)> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let (segment, key) = text.split_once(':').ok_or_else(bad)?;
    let segment: usize = segment.parse().map_err(|_| bad())?;
    if segment >= segments || key.len() % 2 != 0 || !key.is_ascii() {
        return Err(bad());
    }
    let key = (0..key.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&key[at..at + 2], 16).map_err(|_| bad()))
        .collect::<Result<Vec<u8>>>()?;
    Ok((segment, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LeaseKind;
    use crate::etcd::keys::{entry_key, size_key};
    use crate::OwnerToken;

    #[test]
    fn every_queue_key_is_found_in_one_segment_only() {
        let owner = OwnerToken::from_hex(&"ab".repeat(16)).unwrap();
        for full_prefix in ["", "ns:", "ns:a"] {
            let parts = segments("lock", full_prefix);
            for (full, kind, primitive) in [
                ("ns:a/1", LeaseKind::Exclusive, Primitive::Lock),
                ("ns:a~", LeaseKind::Fair, Primitive::Fair),
                ("ns:ab", LeaseKind::Read, Primitive::ReadWrite),
                (
                    "ns:a",
                    LeaseKind::Permits { count: 1, limit: 1 },
                    Primitive::Semaphore,
                ),
                ("ns:a库", LeaseKind::Leader, Primitive::Election),
            ] {
                let range = queue_prefix("lock", kind, full);
                for key in [entry_key(&range, owner), size_key(&range)] {
                    let holding: Vec<_> = parts
                        .iter()
                        .filter(|p| {
                            p.start.as_slice() <= key.as_bytes()
                                && key.as_bytes() < p.end.as_slice()
                        })
                        .filter_map(|p| queue_of(p, key.as_bytes()).map(|q| (p.primitive, q)))
                        .collect();
                    assert_eq!(
                        holding,
                        [(primitive, (range.clone(), full.to_owned()))],
                        "{key}"
                    );
                }
            }
            let latch = latch_key("lock", "ns:a");
            let found: Vec<_> = parts
                .iter()
                .filter(|p| {
                    p.start.as_slice() <= latch.as_bytes() && latch.as_bytes() < p.end.as_slice()
                })
                .map(|p| {
                    if p.primitive == Primitive::Latch {
                        latch_of(p, latch.as_bytes())
                    } else {
                        queue_of(p, latch.as_bytes()).map(|(_, full)| full)
                    }
                })
                .collect();
            assert_eq!(found, [Some("ns:a".to_owned())], "{latch}");
            let audit = crate::etcd::keys::audit_key("lock", "ns:a", owner);
            assert!(
                parts
                    .iter()
                    .all(|p| !(p.start.as_slice() <= audit.as_bytes()
                        && audit.as_bytes() < p.end.as_slice())
                        || queue_of(p, audit.as_bytes()).is_none()),
                "{audit}"
            );
        }
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let key = b"lock/ns:a/\xff".to_vec();
        let text = format!("3:{}", hex(&key));
        assert_eq!(parse_cursor(&text, 6).unwrap(), (3, key));
        for bad in ["", "x", "9:00", "1:0", "1:zz", "-1:00"] {
            assert!(parse_cursor(bad, 6).is_err(), "{bad}");
        }
        assert_eq!(prefix_end(b"a/"), b"a0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
    }
}
