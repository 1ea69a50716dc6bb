//! The recovery-point table's SQL, with the table's name put in once.

use crate::backends::sql::SWEEP_BATCH;

/// The default table.
pub(super) const DEFAULT_TABLE: &str = "lock_core_recovery_points";

/// The table's `CREATE` statements (the table, and the index the sweep deletes by), after the
/// table's name; `{t}` stands for it.
macro_rules! schema {
    () => {
        "CREATE TABLE IF NOT EXISTS {t} (
  key        text COLLATE \"C\" PRIMARY KEY,
  entry      bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS {t}_expires_at ON {t} (expires_at)"
    };
}

/// [`DEFAULT_TABLE`]'s migration.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS lock_core_recovery_points (
  key        text COLLATE \"C\" PRIMARY KEY,
  entry      bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lock_core_recovery_points_expires_at ON lock_core_recovery_points (expires_at)";

/// The migration of a table named `table` (checked beforehand).
pub(super) fn migration(table: &str) -> String {
    schema!().replace("{t}", table)
}

/// The statements on one table.
#[derive(Debug)]
pub(super) struct Statements {
    /// `$1` key → the live entry, if any.
    pub(super) find: String,
    /// `$1` key, `$2` entry, `$3` keep in µs → a row when written (no live point was there).
    pub(super) record: String,
    /// Deletes up to [`SWEEP_BATCH`] expired rows.
    pub(super) purge_batch: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        Self {
            find: format!("SELECT entry FROM {t} WHERE key = $1 AND expires_at > now()"),
            // An insert on the primary key: a second execution's insert waits for the first
            // one's transaction, then finds its row (and writes nothing) if it committed, or
            // writes its own if it rolled back. An expired point gives way.
            record: format!(
                "INSERT INTO {t} AS r (key, entry, expires_at)
                 VALUES ($1, $2, now() + $3::float8 * interval '1 microsecond')
                 ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry, expires_at = EXCLUDED.expires_at
                 WHERE r.expires_at <= now()
                 RETURNING 1"
            ),
            purge_batch: format!(
                "DELETE FROM {t} WHERE key IN (
                   SELECT key FROM {t} WHERE expires_at <= now() LIMIT {SWEEP_BATCH}
                   FOR UPDATE SKIP LOCKED)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_constant_is_the_default_tables() {
        assert_eq!(migration(DEFAULT_TABLE), MIGRATION);
    }
}
