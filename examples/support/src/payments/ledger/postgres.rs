//! The ledger in PostgreSQL: a payment's row, its balances and its answer in one transaction.

use lock_core::idempotency::{ClaimInfo, Committed};
use lock_core::results::StoredResponse;
use lock_core::LockError;
use sqlx::{PgPool, Postgres, Row, Transaction};

use super::{Effect, LedgerError, Recorded, ACCOUNTS_TABLE, LEDGER_TABLE};
use crate::payments::answer::PaymentAnswer;
use crate::payments::input::Payment;

/// Serializes concurrent creators of the tables (`IF NOT EXISTS` alone can collide).
const SCHEMA_LOCK: i64 = 0x7061_796d_656e_7473; // "payments"

pub(super) fn unavailable(error: sqlx::Error) -> LedgerError {
    LedgerError::Unavailable(error.to_string())
}

pub(super) async fn create_tables(pool: &PgPool) -> Result<(), LedgerError> {
    // No unique constraint on (namespace, scope, idempotency_key): see the module docs.
    let batch = format!(
        "SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
         CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (
           id              bigserial PRIMARY KEY,
           namespace       text NOT NULL,
           scope           text NOT NULL,
           idempotency_key text NOT NULL,
           fence           bigint NOT NULL,
           from_account    text NOT NULL,
           to_account      text NOT NULL,
           cents           bigint NOT NULL,
           created_at      timestamptz NOT NULL DEFAULT now()
         );
         CREATE INDEX IF NOT EXISTS {LEDGER_TABLE}_by_key
           ON {LEDGER_TABLE} (namespace, scope, idempotency_key);
         CREATE TABLE IF NOT EXISTS {ACCOUNTS_TABLE} (
           namespace text NOT NULL,
           account   text NOT NULL,
           balance   bigint NOT NULL,
           PRIMARY KEY (namespace, account)
         );"
    );
    sqlx::raw_sql(&batch)
        .execute(pool)
        .await
        .map(drop)
        .map_err(unavailable)
}

/// The payment's row, the two balances and the receipt as the request's answer, committed
/// together, or nothing.
pub(super) async fn record(
    pool: &PgPool,
    namespace: &str,
    claim: &ClaimInfo,
    payment: &Payment,
    answer_with_payment: bool,
) -> Result<Recorded, LedgerError> {
    let fence = i64::try_from(claim.fencing_token.get())
        .map_err(|_| LedgerError::Unavailable("fence out of range".into()))?;
    let cents = i64::try_from(payment.cents)
        .map_err(|_| LedgerError::Unavailable("amount out of range".into()))?;
    let mut tx = pool.begin().await.map_err(unavailable)?;
    // The fence check and the insert of one key, one at a time (not a constraint: two
    // executions with increasing fences both get their row, should the idempotency fail).
    let key_lock = format!(
        "{}:{namespace}{}:{}{}",
        namespace.len(),
        claim.scope.len(),
        claim.scope,
        claim.key
    );
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(&key_lock)
        .execute(&mut *tx)
        .await
        .map_err(unavailable)?;
    let newest: Option<i64> = sqlx::query_scalar(&format!(
        "SELECT max(fence) FROM {LEDGER_TABLE}
         WHERE namespace = $1 AND scope = $2 AND idempotency_key = $3"
    ))
    .bind(namespace)
    .bind(&claim.scope)
    .bind(&claim.key)
    .fetch_one(&mut *tx)
    .await
    .map_err(unavailable)?;
    if let Some(newer) = newest.filter(|newer| *newer > fence) {
        return Err(LedgerError::Superseded {
            newer: newer as u64,
        });
    }
    let row = sqlx::query(&format!(
        "INSERT INTO {LEDGER_TABLE}
           (namespace, scope, idempotency_key, fence, from_account, to_account, cents)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, (extract(epoch FROM created_at) * 1000)::bigint AS created_ms"
    ))
    .bind(namespace)
    .bind(&claim.scope)
    .bind(&claim.key)
    .bind(fence)
    .bind(&payment.from)
    .bind(&payment.to)
    .bind(cents)
    .fetch_one(&mut *tx)
    .await
    .map_err(unavailable)?;
    move_money(&mut tx, namespace, payment, cents).await?;
    let id = row.try_get::<i64, _>("id").map_err(unavailable)? as u64;
    let created_at_ms = row.try_get::<i64, _>("created_ms").map_err(unavailable)? as u64;
    let effect = Effect::new(id, claim, payment, created_at_ms);
    if !answer_with_payment {
        tx.commit().await.map_err(unavailable)?;
        return Ok(Recorded::Made(effect));
    }
    // The answer this request is replayed with, committed with the payment.
    let answer = PaymentAnswer::receipt(&effect.receipt());
    let stored = StoredResponse::new(
        answer.status,
        vec![(
            "content-type".into(),
            answer.content_type.as_bytes().to_vec(),
        )],
        answer.body,
    );
    match claim.commit_in(&mut tx, &stored).await {
        Ok(Committed::Recorded) => {
            tx.commit().await.map_err(unavailable)?;
            Ok(Recorded::Made(effect))
        }
        // Dropping `tx` rolls the payment back.
        Ok(Committed::Superseded(Some(first))) => serde_json::from_slice(&first.response.body)
            .map(Recorded::Earlier)
            .map_err(|e| {
                LedgerError::Unavailable(format!("the first answer is not a receipt: {e}"))
            }),
        Ok(Committed::Superseded(None)) => Err(LedgerError::InProgress),
        Ok(Committed::KeyReused) => Err(LedgerError::KeyReused),
        Ok(other) => Err(LedgerError::Unavailable(format!(
            "unexpected commit answer {other:?}"
        ))),
        Err(error @ LockError::InvalidConfig(_)) => Err(LedgerError::Unwired(error.to_string())),
        Err(error) => Err(LedgerError::Unavailable(error.with_causes())),
    }
}

/// Debits `from` and credits `to`, in the accounts' name order so that two payments between
/// the same two accounts in opposite directions cannot deadlock.
async fn move_money(
    tx: &mut Transaction<'_, Postgres>,
    namespace: &str,
    payment: &Payment,
    cents: i64,
) -> Result<(), LedgerError> {
    let mut moves = [(&payment.from, -cents), (&payment.to, cents)];
    moves.sort_by(|a, b| a.0.cmp(b.0));
    for (account, delta) in moves {
        sqlx::query(&format!(
            "INSERT INTO {ACCOUNTS_TABLE} (namespace, account, balance) VALUES ($1, $2, $3)
             ON CONFLICT (namespace, account) DO UPDATE SET balance = {ACCOUNTS_TABLE}.balance + $3"
        ))
        .bind(namespace)
        .bind(account)
        .bind(delta)
        .execute(&mut **tx)
        .await
        .map_err(unavailable)?;
    }
    Ok(())
}

pub(super) async fn effects(pool: &PgPool, namespace: &str) -> Result<Vec<Effect>, LedgerError> {
    let rows = sqlx::query(&format!(
        "SELECT id, scope, idempotency_key, fence, from_account, to_account, cents,
                (extract(epoch FROM created_at) * 1000)::bigint AS created_ms
         FROM {LEDGER_TABLE} WHERE namespace = $1 ORDER BY id"
    ))
    .bind(namespace)
    .fetch_all(pool)
    .await
    .map_err(unavailable)?;
    rows.iter()
        .map(|row| {
            Ok(Effect {
                id: row.try_get::<i64, _>("id")? as u64,
                scope: row.try_get("scope")?,
                key: row.try_get("idempotency_key")?,
                fence: row.try_get::<i64, _>("fence")? as u64,
                from: row.try_get("from_account")?,
                to: row.try_get("to_account")?,
                cents: row.try_get::<i64, _>("cents")? as u64,
                created_at_ms: row.try_get::<i64, _>("created_ms")? as u64,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(unavailable)
}

pub(super) async fn balance(
    pool: &PgPool,
    namespace: &str,
    account: &str,
) -> Result<i64, LedgerError> {
    let balance: Option<i64> = sqlx::query_scalar(&format!(
        "SELECT balance FROM {ACCOUNTS_TABLE} WHERE namespace = $1 AND account = $2"
    ))
    .bind(namespace)
    .bind(account)
    .fetch_optional(pool)
    .await
    .map_err(unavailable)?;
    Ok(balance.unwrap_or(0))
}
