//! The result table's SQL, with the table's name put in once.

use sqlx::Postgres;

use crate::results::{FENCE_AT, FENCE_DIGITS, FINAL_KIND, KIND_AT};
use crate::sql::dialect::Sealed;

/// The default table's `CREATE TABLE` (also the channel its pushes go on).
pub(super) const DEFAULT_TABLE: &str = "lock_core_results";

/// [`DEFAULT_TABLE`]'s migration: the table (`kind` and `fence` are the stored entry's header,
/// kept beside it so the put can compare them) and the index the hourly purge deletes by.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS lock_core_results (
  key        text COLLATE \"C\" PRIMARY KEY,
  kind       \"char\" NOT NULL,
  fence      text COLLATE \"C\" NOT NULL,
  entry      bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lock_core_results_expires_at ON lock_core_results (expires_at)";

/// The migration of a table named `table` (checked beforehand).
pub(super) fn migration(table: &str) -> String {
    MIGRATION.replace(DEFAULT_TABLE, table)
}

pub(super) struct Statements {
    /// `$1` key → the live entry, if any.
    pub(super) get: String,
    /// See [`Statements::new`].
    pub(super) put: String,
    /// `$1` key.
    pub(super) remove: String,
    /// Deletes up to [`SWEEP_BATCH`](crate::sql::sweep::SWEEP_BATCH) expired rows.
    pub(super) purge_batch: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        let final_kind = char::from(FINAL_KIND);
        // Whether the row `r` gives way to a put with fence `$2` (`$3`: the same fence too):
        // an expired row always; a final one never; otherwise by fence, compared as text
        // (20 digits), as the memory and Redis stores compare them.
        let gives_way = format!(
            "(r.expires_at <= now() OR (r.kind <> '{final_kind}' \
             AND (r.fence < $2 COLLATE \"C\" OR ($3 AND r.fence = $2 COLLATE \"C\"))))"
        );
        // $1 key  $2 the put's fence  $3 rule is OlderOrSame  $4 kind  $5 the entry's fence
        // $6 entry  $7 keep, µs (0: push only)  $8 channel  $9 payload (NULL: no push).
        // One statement, so one transaction: the upsert locks the row and decides on its
        // latest version; the notification goes out when it commits, and only if the entry
        // was stored (or, with keep 0, would have been).
        let put = format!(
            "WITH stored AS (
               INSERT INTO {t} AS r (key, kind, fence, entry, expires_at)
               SELECT $1, $4, $5, $6, now() + $7::float8 * interval '1 microsecond'
               WHERE $7 > 0
               ON CONFLICT (key) DO UPDATE SET
                 kind = EXCLUDED.kind,
                 fence = EXCLUDED.fence,
                 entry = EXCLUDED.entry,
                 expires_at = EXCLUDED.expires_at
               WHERE {gives_way}
               RETURNING 1 AS one
             ),
             passed AS (
               SELECT 1 AS one WHERE $7 = 0 AND NOT EXISTS (
                 SELECT 1 FROM {t} r WHERE r.key = $1 AND NOT {gives_way})
             ),
             done AS (SELECT one FROM stored UNION ALL SELECT one FROM passed)
             SELECT (SELECT count(*) FROM done) AS stored,
                    (SELECT count(*) FROM done,
                       LATERAL (SELECT pg_notify($8, $9) WHERE $9 IS NOT NULL) AS push) AS pushed"
        );
        Self {
            get: Postgres::live_entry(t, "key"),
            put,
            remove: format!("DELETE FROM {t} WHERE key = $1"),
            purge_batch: Postgres::purge_expired(t, "key"),
        }
    }
}

/// The header of `entry` as the table keeps it: its kind byte (as PostgreSQL's `"char"`, 0
/// when missing) and its fence (empty when missing, so any fenced put replaces an entry that
/// is not ours, as in the other stores).
pub(super) fn header(entry: &[u8]) -> (i8, &str) {
    let kind = entry.get(KIND_AT).map_or(0, |&b| i8::from_ne_bytes([b]));
    let fence = entry
        .get(FENCE_AT..FENCE_AT + FENCE_DIGITS)
        .and_then(|fence| std::str::from_utf8(fence).ok())
        .unwrap_or("");
    (kind, fence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_constant_is_the_default_tables() {
        assert_eq!(migration(DEFAULT_TABLE), MIGRATION);
    }

    #[test]
    fn headers() {
        let entry = format!("lc1 C {:020} rest", 42);
        assert_eq!(
            header(entry.as_bytes()),
            (b'C' as i8, "00000000000000000042")
        );
        assert_eq!(header(b"lc1 V 12"), (b'V' as i8, ""));
        assert_eq!(header(b"lc"), (0, ""));
    }
}
