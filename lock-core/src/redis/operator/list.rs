//! Listing the keys held or waited on: `SCAN` with a pattern on each primary in turn, in
//! bounded steps, each key found inspected. The cursor is `<node>:<scan cursor>:<skip>`.
//!
//! A lock (a primitive, a latch) has a main key and a queue, and `SCAN` finds both, in one
//! step or in two: a key is given where its main key is found, and where its queue is found
//! only when it has no holder (then no main key is there to find: it is queued, not held).

use super::super::{to_lock_error, RedisBackend};
use futures_util::{StreamExt, TryStreamExt};

use super::store_key::{self, Part};
use crate::backend::{
    InspectionPage, KeyInspection, KeyStatus, ListCursor, ListRequest, Primitive,
};
use crate::{LockError, Result};

/// Keys asked for per `SCAN` step.
const SCAN_COUNT: usize = 1_000;
/// The most inspections of one page in flight at once.
const INSPECTIONS_IN_FLIGHT: usize = 32;
/// The most `SCAN` steps one page takes: a page may come back short (with a cursor) rather
/// than keep the caller waiting on a large keyspace with few matches.
const MAX_STEPS: usize = 20;

impl RedisBackend {
    pub(super) async fn list_keys(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        let connection = self.shared.connection.clone();
        let nodes = connection.scan_nodes().await.map_err(to_lock_error)?;
        let (mut node, mut cursor, mut skip) = match request.cursor {
            Some(cursor) => parse_cursor(cursor.as_str())?,
            None => (0, 0, 0),
        };
        let pattern = store_key::pattern(&self.shared.prefix, request.prefix);
        let mut found: Vec<(Primitive, String, Part)> = Vec::new();
        let mut resume = None;
        let mut steps = 0;
        while node < nodes.len() && found.len() < request.limit && steps < MAX_STEPS {
            steps += 1;
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT);
            let (next, keys): (u64, Vec<String>) = connection
                .query_node(nodes[node].as_ref(), &scan)
                .await
                .map_err(to_lock_error)?;
            let mut matches: Vec<(Primitive, String, Part)> = Vec::new();
            for key in keys {
                let Some((primitive, full, part)) = store_key::parse(&self.shared.prefix, &key)
                else {
                    continue;
                };
                if !full.starts_with(request.prefix) {
                    continue;
                }
                // Both keys in one step: one entry, by its main key.
                match matches
                    .iter_mut()
                    .find(|(p, f, _)| *p == primitive && *f == full)
                {
                    Some(seen) if part == Part::Main => seen.2 = Part::Main,
                    Some(_) => {}
                    None => matches.push((primitive, full, part)),
                }
            }
            let room = request.limit - found.len();
            let fresh = matches.len().saturating_sub(skip);
            if fresh > room {
                // The step gave more than the page holds: the next page runs this step again
                // and skips what this one took.
                found.extend(matches.into_iter().skip(skip).take(room));
                resume = Some((node, cursor, skip + room));
                break;
            }
            found.extend(matches.into_iter().skip(skip));
            skip = 0;
            cursor = next;
            if cursor == 0 {
                node += 1;
            }
        }
        // Read in flight together (up to INSPECTIONS_IN_FLIGHT at once), as the connection
        // pipelines concurrent calls: a page costs a few round trips, not one per key.
        let seen_all: Vec<KeyInspection> = futures_util::stream::iter(found.clone())
            .map(|(primitive, full, _)| async move { self.inspect_key(primitive, &full).await })
            .buffered(INSPECTIONS_IN_FLIGHT)
            .try_collect()
            .await?;
        let mut inspected = Vec::with_capacity(found.len());
        for ((_, _, part), seen) in found.iter().zip(seen_all) {
            let by_main_key = matches!(seen.status, KeyStatus::Held | KeyStatus::Counting);
            // Found by its queue but held: its main key is (or was) found where it lies. Found
            // by both in two steps of this page: given once.
            let given = inspected
                .iter()
                .any(|k: &KeyInspection| k.primitive == seen.primitive && k.key == seen.key);
            if seen.status != KeyStatus::Free && !(by_main_key && *part == Part::Queue) && !given {
                inspected.push(seen);
            }
        }
        let next = resume
            .or_else(|| (node < nodes.len()).then_some((node, cursor, 0)))
            .map(|(node, cursor, skip)| ListCursor::new(format!("{node}:{cursor}:{skip}")));
        Ok(InspectionPage::new(inspected, next))
    }
}

/// `<node>:<scan cursor>:<matches of that step already given>`.
fn parse_cursor(text: &str) -> Result<(usize, u64, usize)> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let mut parts = text.split(':');
    let mut next = || parts.next().ok_or_else(bad);
    let (node, cursor, skip) = (next()?, next()?, next()?);
    Ok((
        node.parse().map_err(|_| bad())?,
        cursor.parse().map_err(|_| bad())?,
        skip.parse().map_err(|_| bad())?,
    ))
}
