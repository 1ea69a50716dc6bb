//! The leases this backend has granted and not yet let go, so that all of them can be checked
//! at once when the server may have lost them.
//!
//! A Redis restart without persistence (or a failover to a replica that had not seen the
//! writes) loses every lock key, and another client can take a lock within milliseconds of the
//! server coming back. A holder would otherwise learn it only at its next renewal, up to a third
//! of the lease later. Instead, when the wake-up subscription drops and comes back (the
//! connection-state signal: a restart always cuts it), every lease is re-read in one `MGET` per
//! batch, and those whose key no longer holds our value fire their lost signal at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::RedisConnection;

use crate::sync::lock;
use crate::{LossSignal, LostReason};

/// Whether a lock's value `found` is the lease `expected` (`<owner>:<fence>`): the value is
/// that, then `|` and the holder's record (or that alone, written by an older version).
pub(super) fn holds(found: &str, expected: &str) -> bool {
    found
        .strip_prefix(expected)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('|'))
}

/// Keys read per `MGET`, so one check never blocks the server for long.
const BATCH: usize = 512;

/// The live leases of one backend.
#[derive(Default)]
pub(super) struct LeaseBook {
    next: AtomicU64,
    leases: Mutex<HashMap<u64, Entry>>,
}

struct Entry {
    lock_key: String,
    /// The hash field holding the lease (the other primitives'), `None` for a lock's string.
    field: Option<String>,
    value: String,
    loss: LossSignal,
}

/// One lease to check: where it lives, what it must hold, what to fire.
type Check = (String, Option<String>, String, LossSignal);

/// A lease's place in the book; dropping it (with the lease) takes the lease out.
pub(super) struct Entered {
    book: Arc<LeaseBook>,
    id: u64,
}

impl std::fmt::Debug for Entered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entered").field("id", &self.id).finish()
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        lock(&self.book.leases).remove(&self.id);
    }
}

impl LeaseBook {
    /// Records a granted lease: `value` is what its key holds while it lasts, `loss` what to
    /// fire when it does not.
    pub(super) fn enter(
        self: &Arc<Self>,
        lock_key: &str,
        value: &str,
        loss: LossSignal,
    ) -> Entered {
        self.enter_entry(Entry {
            lock_key: lock_key.to_owned(),
            field: None,
            value: value.to_owned(),
            loss,
        })
    }

    /// Records a granted lease of another primitive: field `field` of hash `hash_key` holds
    /// `value` while it lasts.
    pub(super) fn enter_field(
        self: &Arc<Self>,
        hash_key: &str,
        field: &str,
        value: &str,
        loss: LossSignal,
    ) -> Entered {
        self.enter_entry(Entry {
            lock_key: hash_key.to_owned(),
            field: Some(field.to_owned()),
            value: value.to_owned(),
            loss,
        })
    }

    fn enter_entry(self: &Arc<Self>, entry: Entry) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.leases).insert(id, entry);
        Entered {
            book: self.clone(),
            id,
        }
    }

    /// Takes a wake-channel message that is a revocation (`force_release.lua`,
    /// `primitive_force_release.lua`: `!revoke\n<owner>\n<operator>\n<reason>\n<key>`, the
    /// key a lock's or a primitive's leases hash; operator and reason hold no line breaks; on a
    /// Redis Cluster the same message also comes on the backend's revocation channel,
    /// `operator/force.rs`) and fires the lost signal of the lease it names with
    /// [`LostReason::Revoked`]. Returns whether the message was a revocation (whether or not
    /// the lease is still in the book); anything else is left to the wake-up routing.
    pub(super) fn revoke(&self, message: &str) -> bool {
        let Some(message) = message.strip_prefix("!revoke\n") else {
            return false;
        };
        let mut parts = message.splitn(4, '\n');
        let (Some(owner), Some(operator), Some(reason), Some(lock_key)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return true;
        };
        let revoked: Vec<LossSignal> = lock(&self.leases)
            .values()
            .filter(|e| {
                e.lock_key == lock_key
                    && match &e.field {
                        // A primitive's lease: its field in the leases hash is the owner.
                        Some(field) => field == owner,
                        // A lock's: its value is `<owner>:<fence>`.
                        None => {
                            e.value.len() > owner.len()
                                && e.value.starts_with(owner)
                                && e.value.as_bytes()[owner.len()] == b':'
                        }
                    }
            })
            .map(|e| e.loss.clone())
            .collect();
        for loss in &revoked {
            loss.fire(LostReason::Revoked {
                operator: operator.to_owned(),
                reason: reason.to_owned(),
            });
        }
        true
    }

    /// Re-reads every lease and fires the lost signal of those the server no longer holds
    /// under our value. Returns how many were lost. Leases granted after the snapshot are
    /// not checked; their grant already ran on the server that answers now.
    pub(super) async fn recheck(
        &self,
        connection: &mut RedisConnection,
    ) -> redis::RedisResult<usize> {
        let snapshot: Vec<Check> = lock(&self.leases)
            .values()
            .filter(|e| !e.loss.is_fired())
            .map(|e| {
                let (key, field) = (e.lock_key.clone(), e.field.clone());
                (key, field, e.value.clone(), e.loss.clone())
            })
            .collect();
        let (plain, hashed): (Vec<Check>, Vec<Check>) = snapshot
            .into_iter()
            .partition(|(_, field, _, _)| field.is_none());
        let mut lost = 0;
        for batch in plain.chunks(BATCH).chain(hashed.chunks(BATCH)) {
            let values: Vec<Option<String>> = if batch[0].1.is_none() {
                let keys: Vec<&str> = batch.iter().map(|(key, ..)| key.as_str()).collect();
                redis::cmd("MGET")
                    .arg(&keys)
                    .query_async(connection)
                    .await?
            } else {
                hget_each(connection, batch).await?
            };
            for ((key, field, expected, loss), found) in batch.iter().zip(values) {
                let held = found.as_deref().is_some_and(|found| match field {
                    Some(_) => found == expected,
                    None => holds(found, expected),
                });
                if !held && loss.fire(LostReason::NotOwner) {
                    tracing::warn!(redis_key = %key, "lease gone after the connection came back (server restarted or failed over?)");
                    lost += 1;
                }
            }
        }
        Ok(lost)
    }

    pub(super) fn len(&self) -> usize {
        lock(&self.leases).len()
    }
}

/// The field of each hashed lease in `batch`: one pipeline on one server; on a Redis Cluster,
/// one command each (their keys are in different slots, which one pipeline cannot mix).
async fn hget_each(
    connection: &mut RedisConnection,
    batch: &[Check],
) -> redis::RedisResult<Vec<Option<String>>> {
    if connection.is_cluster() {
        let mut values = Vec::with_capacity(batch.len());
        for (key, field, ..) in batch {
            let value: Option<String> = redis::cmd("HGET")
                .arg(key)
                .arg(field.as_deref().unwrap_or_default())
                .query_async(connection)
                .await?;
            values.push(value);
        }
        return Ok(values);
    }
    let mut pipe = redis::pipe();
    for (key, field, ..) in batch {
        pipe.hget(key, field.as_deref().unwrap_or_default());
    }
    pipe.query_async(connection).await
}
