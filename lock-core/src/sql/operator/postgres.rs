//! The operator's view of the PostgreSQL lock table: the clauses its statements differ in, and
//! the forced release's statements and transaction (the row locked, freed with a token drawn from the sequence, the audit row
//! appended, the waiters and the holder's process notified, all at commit).

use std::sync::Arc;

use sqlx::postgres::PgPool;
use sqlx::Row;

use super::force::RECORD_COLUMNS;
use super::{ForceAsk, Forced, OperatorDialect};
use crate::sql::leases::Revocation;

/// The label column is read only where the grant that holds the row wrote it: a grant by a
/// client of an older version updates the row without it, and must not show the previous
/// holder's.
const LABEL: &str = "CASE WHEN label_owner = owner THEN label END";

/// A live lease: held by someone (a released row stays, with no owner) and not expired.
const LIVE: &str = "owner <> '' AND expires_at > now()";

/// PostgreSQL's statements for a forced release.
pub struct PgForce {
    /// The key's live lease, locked: binds the `lock_key`.
    holder: String,
    /// Frees the holder's row with the next token: binds the `lock_key` and the owner.
    free: String,
    /// Appends the audit row, returning its time: binds the record's fields.
    record: String,
    /// Wakes the waiters and tells the holder's process: binds both channels and payloads.
    notify: String,
}

impl OperatorDialect for sqlx::Postgres {
    const OPERATOR_MIGRATION: &'static str =
        include_str!("../../../migrations/postgres/0003_lock_core_operator.sql");

    const LIVE: &'static str = LIVE;
    const LABEL: &'static str = LABEL;
    const LEASE_LEFT_US: &'static str =
        "(extract(epoch FROM expires_at - now()) * 1000000)::bigint";
    const NOW: &'static str = "now()";
    const NAME_STARTS_WITH: &'static str = "left(name, length(?)) = ?";

    fn unix_us(column: &str) -> String {
        format!("(extract(epoch FROM {column}) * 1000000)::bigint")
    }

    type Text = String;
    type Token = i64;

    fn text(column: String) -> String {
        column
    }

    fn token(column: i64) -> i64 {
        column
    }

    type Force = PgForce;

    fn force_statements(t: &str) -> PgForce {
        PgForce {
            holder: format!(
                "SELECT owner, fence, {LABEL} FROM {t} WHERE lock_key = $1 AND {LIVE} FOR UPDATE"
            ),
            // The row stays (free, expired), as a release leaves it: every later grant then
            // draws its token on the update path, after this one.
            free: format!(
                "UPDATE {t} SET owner = '', expires_at = now(), fence = nextval('{t}_fence') \
                 WHERE lock_key = $1 AND owner = $2 RETURNING fence"
            ),
            record: format!(
                "INSERT INTO {t}_audit ({RECORD_COLUMNS})
                 VALUES (now(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                         now() + $11::float8 * interval '1 microsecond')
                 RETURNING (extract(epoch FROM at) * 1000000)::bigint"
            ),
            notify: "SELECT 1 FROM (SELECT pg_notify($1, $2), pg_notify($3, $4)) AS wake".into(),
        }
    }

    async fn has_operator_schema(pool: &PgPool, table: &str) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT to_regclass($2) IS NOT NULL AND EXISTS (
               SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1)
                 AND attname = 'label_owner' AND NOT attisdropped)",
        )
        .bind(table)
        .bind(format!("{table}_audit"))
        .fetch_one(pool)
        .await
    }

    async fn force_release(
        pool: PgPool,
        force: Arc<PgForce>,
        ask: ForceAsk,
    ) -> Result<Forced, sqlx::Error> {
        let mut tx = pool.begin().await?;
        let holder: Option<(String, i64, Option<String>)> = sqlx::query_as(&force.holder)
            .bind(&ask.lock_key)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((owner, old_token, label)) = holder else {
            tx.rollback().await?;
            return Ok(Forced::Free);
        };
        if ask.names_another(&owner) {
            tx.rollback().await?;
            return Ok(Forced::NotOwner);
        }
        let new_token: i64 = sqlx::query_scalar(&force.free)
            .bind(&ask.lock_key)
            .bind(&owner)
            .fetch_one(&mut *tx)
            .await?;
        if new_token <= old_token {
            // Dropping the transaction rolls it back.
            return Err(sqlx::Error::Protocol(format!(
                "the fencing sequence gave {new_token}, not past the holder's {old_token}"
            )));
        }
        let record = sqlx::query(&force.record);
        let at_us: i64 = ask
            .bind_record(record, &owner, label.as_deref(), old_token, new_token)
            .bind(ask.retention_us)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        let revocation = Revocation::payload(&owner, &ask.operator, &ask.reason, &ask.lock_key);
        sqlx::query(&force.notify)
            .bind(&ask.channel)
            .bind(&ask.lock_key)
            .bind(&ask.revoke_channel)
            .bind(&revocation)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ask.released(at_us, owner, label, old_token, new_token))
    }
}
