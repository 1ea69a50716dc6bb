//! The operator's view of the PostgreSQL lock table: its statements, and the forced release's
//! transaction (the row locked, freed with a token drawn from the sequence, the audit row
//! appended, the waiters and the holder's process notified, all at commit).

use std::sync::Arc;

use sqlx::postgres::PgPool;

use super::{AuditRow, ForceAsk, Forced, HeldRow, OperatorDialect, OperatorStatements};
use crate::sql::dialect::{arguments, Arg, Sealed};
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

    type Force = PgForce;

    fn operator_statements(t: &str) -> (OperatorStatements, PgForce) {
        let held = format!(
            "lock_key, name, owner, fence, {LABEL}, \
             (extract(epoch FROM acquired_at) * 1000000)::bigint, \
             (extract(epoch FROM expires_at - now()) * 1000000)::bigint"
        );
        let list = |bounded: bool| {
            let high = if bounded { "AND lock_key < ? " } else { "" };
            Self::placeholders(&format!(
                "SELECT * FROM (
                   (SELECT {held} FROM {t}
                    WHERE lock_key > ? AND lock_key >= ? {high}
                      AND NOT (lock_key >= ? AND lock_key < ?) AND {LIVE}
                    ORDER BY lock_key LIMIT ?)
                   UNION ALL
                   (SELECT {held} FROM {t}
                    WHERE lock_key > ? AND lock_key >= ? AND lock_key < ?
                      AND left(name, length(?)) = ? AND {LIVE}
                    ORDER BY lock_key LIMIT ?)
                 ) AS page ORDER BY lock_key LIMIT ?"
            ))
        };
        let audited = "(extract(epoch FROM at) * 1000000)::bigint, name, primitive, operator, \
                       reason, old_owner, old_kind, old_label, old_token, new_token";
        let statements = OperatorStatements {
            inspect: format!("SELECT {held} FROM {t} WHERE lock_key = $1 AND {LIVE}"),
            list_bounded: list(true),
            list_open: list(false),
            audit_of_key: format!(
                "SELECT {audited} FROM {t}_audit WHERE lock_key = $1 AND expires_at > now() \
                 ORDER BY id DESC LIMIT $2"
            ),
            audit_under: format!(
                "SELECT {audited} FROM {t}_audit \
                 WHERE left(name, length($1)) = $2 AND expires_at > now() \
                 ORDER BY id DESC LIMIT $3"
            ),
        };
        let force = PgForce {
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
                "INSERT INTO {t}_audit (at, lock_key, name, primitive, operator, reason, \
                   old_owner, old_kind, old_label, old_token, new_token, expires_at)
                 VALUES (now(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                         now() + $11::float8 * interval '1 microsecond')
                 RETURNING (extract(epoch FROM at) * 1000000)::bigint"
            ),
            notify: "SELECT 1 FROM (SELECT pg_notify($1, $2), pg_notify($3, $4)) AS wake".into(),
        };
        (statements, force)
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

    async fn held_rows<'a>(
        pool: &'a PgPool,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> Result<Vec<HeldRow>, sqlx::Error> {
        type Row = (
            String,
            String,
            String,
            i64,
            Option<String>,
            Option<i64>,
            Option<i64>,
        );
        let rows: Vec<Row> = sqlx::query_as_with(sql, arguments::<Self>(args)?)
            .fetch_all(pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(lock_key, name, owner, fence, label, acquired_us, left_us)| HeldRow {
                    lock_key,
                    name,
                    owner,
                    fence,
                    label,
                    acquired_us,
                    left_us,
                },
            )
            .collect())
    }

    async fn audit_rows<'a>(
        pool: &'a PgPool,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> Result<Vec<AuditRow>, sqlx::Error> {
        type Row = (
            i64,
            String,
            String,
            String,
            String,
            String,
            String,
            Option<String>,
            i64,
            i64,
        );
        let rows: Vec<Row> = sqlx::query_as_with(sql, arguments::<Self>(args)?)
            .fetch_all(pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    at_us,
                    name,
                    primitive,
                    operator,
                    reason,
                    old_owner,
                    old_kind,
                    old_label,
                    old_token,
                    new_token,
                )| AuditRow {
                    at_us,
                    name,
                    primitive,
                    operator,
                    reason,
                    old_owner,
                    old_kind,
                    old_label,
                    old_token,
                    new_token,
                },
            )
            .collect())
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
        if ask.owner.as_ref().is_some_and(|named| *named != owner) {
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
        let at_us: i64 = sqlx::query_scalar(&force.record)
            .bind(&ask.lock_key)
            .bind(&ask.name)
            .bind(ask.primitive)
            .bind(&ask.operator)
            .bind(&ask.reason)
            .bind(&owner)
            .bind(ask.kind)
            .bind(&label)
            .bind(old_token)
            .bind(new_token)
            .bind(ask.retention_us)
            .fetch_one(&mut *tx)
            .await?;
        let revocation = Revocation::payload(&owner, &ask.operator, &ask.reason, &ask.lock_key);
        sqlx::query(&force.notify)
            .bind(&ask.channel)
            .bind(&ask.lock_key)
            .bind(&ask.revoke_channel)
            .bind(&revocation)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Forced::Released(AuditRow {
            at_us,
            name: ask.name,
            primitive: ask.primitive.to_owned(),
            operator: ask.operator,
            reason: ask.reason,
            old_owner: owner,
            old_kind: ask.kind.to_owned(),
            old_label: label,
            old_token,
            new_token,
        }))
    }
}
