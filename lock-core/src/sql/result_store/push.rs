//! Pushes: what a put sends with `NOTIFY`, and the task that hands what arrives to the local
//! waiters, listening on a connection of its own that it re-establishes when lost.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio_util::sync::CancellationToken;

use super::Db;
use crate::results::Watchers;

/// PostgreSQL refuses `NOTIFY` payloads of 8000 bytes or more (by default).
const PAYLOAD_LIMIT: usize = 8000;

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What a put of `entry` under `key` notifies: `<key length> <key><entry in hex>` when that
/// fits in a payload; otherwise `<key length> <key>` alone (the receivers read the row) if the
/// entry is stored, and nothing if it is only pushed (there is no row to read).
pub(super) fn payload(key: &str, entry: &[u8], stored: bool) -> Option<String> {
    let head = format!("{} {key}", key.len());
    if head.len() + 2 * entry.len() < PAYLOAD_LIMIT {
        let mut payload = head;
        payload.reserve(2 * entry.len());
        for byte in entry {
            payload.push(char::from(HEX[usize::from(byte >> 4)]));
            payload.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        Some(payload)
    } else {
        stored.then_some(head)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A received payload → `(key, Some(entry))`, or `(key, None)` when it names only the key.
fn split(payload: &str) -> Option<(&str, Option<Vec<u8>>)> {
    let (length, rest) = payload.split_once(' ')?;
    let length: usize = length.parse().ok()?;
    let key = rest.get(..length)?;
    let hex = &rest.as_bytes()[length..];
    if hex.is_empty() {
        return Some((key, None));
    }
    if hex.len() % 2 != 0 {
        return None;
    }
    let entry = hex
        .chunks(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect::<Option<Vec<u8>>>()?;
    Some((key, Some(entry)))
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// A listener on `channel`, on a connection of `pool`'s that it keeps.
pub(super) async fn subscribe(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// Hands every notification on `channel` to the local waiters of its key, until `stop` (the
/// last clone of the store dropped) or until the pool is closed. A lost connection is
/// re-established, with a backoff from 50 ms to 2 s between attempts; pushes sent meanwhile
/// are gone, and their waiters get the value through the lease they also queue for.
pub(super) async fn route(
    first: PgListener,
    channel: String,
    db: Db,
    watchers: Arc<Watchers>,
    stop: CancellationToken,
) {
    let mut listener = Some(first);
    let mut backoff = FIRST_BACKOFF;
    loop {
        let Some(connected) = listener.as_mut() else {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            // While the pool's breaker is open, try when its probe is due: the outage is the
            // breaker's to report, each try here is DEBUG.
            tokio::select! {
                () = stop.cancelled() => return,
                () = db.breaker.ready() => {}
            }
            match subscribe(&db.pool, &channel).await {
                Ok(again) => {
                    tracing::debug!("result push connection re-established");
                    listener = Some(again);
                }
                Err(sqlx::Error::PoolClosed) => return,
                Err(error) => tracing::debug!(%error, "result push connection still down"),
            }
            continue;
        };
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = connected.try_recv() => next,
        };
        match next {
            Ok(Some(notification)) => {
                backoff = FIRST_BACKOFF;
                deliver(notification.payload(), &db, &watchers);
            }
            Ok(None) => tracing::debug!(
                "result push connection lost and re-established; waiters of pushes sent \
                 meanwhile get the value through the lease"
            ),
            Err(sqlx::Error::PoolClosed) => {
                tracing::debug!("the result store's pool closed; no more pushes");
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "result push connection down; reconnecting");
                listener = None;
            }
        }
    }
}

/// Hands a pushed entry to the waiters of its key in this process; for a push naming only the
/// key, reads the row first (in a task of its own, so notifications keep flowing).
fn deliver(payload: &str, db: &Db, watchers: &Arc<Watchers>) {
    let Some((key, entry)) = split(payload) else {
        tracing::warn!("ignoring a malformed result push");
        return;
    };
    if !watchers.is_watched(key) {
        return;
    }
    match entry {
        Some(entry) => watchers.deliver(key, Arc::new(entry)),
        None => {
            let (key, db, watchers) = (key.to_owned(), db.clone(), watchers.clone());
            tokio::spawn(async move {
                match db.get(&key).await {
                    Ok(Some(entry)) => watchers.deliver(&key, Arc::new(entry)),
                    // Removed or expired since: nothing to hand over.
                    Ok(None) => {}
                    // The pool's breaker reports an outage once.
                    Err(error) if error.is_unavailable() => {
                        tracing::debug!(error = %error.with_causes(), "cannot read a pushed result; its waiters get it through the lease");
                    }
                    Err(error) => {
                        tracing::warn!(error = %error.with_causes(), "cannot read a pushed result; its waiters get it through the lease");
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_entries_travel_in_the_payload() {
        let key = "shop:we ird\nkey é";
        let payload = payload(key, b"lc1 V \x00\xff", true).unwrap();
        assert_eq!(
            split(&payload),
            Some((key, Some(b"lc1 V \x00\xff".to_vec())))
        );
    }

    #[test]
    fn large_entries_travel_by_key_when_stored_and_not_at_all_otherwise() {
        let big = vec![b'x'; PAYLOAD_LIMIT / 2];
        let payload = payload("ns:k", &big, true).unwrap();
        assert_eq!(payload, "4 ns:k");
        assert_eq!(split(&payload), Some(("ns:k", None)));
        assert_eq!(super::payload("ns:k", &big, false), None);
        let fits = vec![b'x'; (PAYLOAD_LIMIT - 7) / 2];
        assert!(super::payload("ns:k", &fits, false).is_some_and(|p| p.len() < PAYLOAD_LIMIT));
    }

    #[test]
    fn malformed_payloads_are_refused() {
        for bad in ["", "x ns:k", "99 ns:k", "4 ns:kabc", "4 ns:kzz", "4 ns:kAB"] {
            assert_eq!(split(bad), None, "{bad:?}");
        }
    }
}
