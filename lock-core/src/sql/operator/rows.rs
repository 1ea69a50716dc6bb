//! The rows the operator's statements return, read once for every dialect: each column as the
//! dialect's driver decodes it ([`OperatorDialect::Text`], [`OperatorDialect::Token`]), then
//! as text and signed numbers.

use std::future::Future;

use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Type};

use super::OperatorDialect;
use crate::sql::dialect::{arguments, Arg};

/// A live lease's row, as the operator's statements read it.
#[derive(Debug)]
pub struct HeldRow {
    pub(crate) lock_key: String,
    pub(crate) name: String,
    pub(crate) owner: String,
    pub(crate) fence: i64,
    /// As stored, if the holder gave one (and, on PostgreSQL, wrote it: a grant by a client of
    /// an older version writes none, and the previous holder's is not shown).
    pub(crate) label: Option<String>,
    /// The grant's time, µs since the Unix epoch (the database's clock).
    pub(crate) acquired_us: Option<i64>,
    /// The lease left, µs (the database's clock).
    pub(crate) left_us: Option<i64>,
}

/// An audit row, as the audit statements read it.
#[derive(Debug, Clone)]
pub struct AuditRow {
    /// When, µs since the Unix epoch (the database's clock).
    pub(crate) at_us: i64,
    pub(crate) name: String,
    pub(crate) primitive: String,
    pub(crate) operator: String,
    pub(crate) reason: String,
    pub(crate) old_owner: String,
    pub(crate) old_kind: String,
    pub(crate) old_label: Option<String>,
    pub(crate) old_token: i64,
    pub(crate) new_token: i64,
}

/// A [`HeldRow`]'s columns as the driver decodes them.
type HeldColumns<D> = (
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Token,
    Option<<D as OperatorDialect>::Text>,
    Option<i64>,
    Option<i64>,
);

/// An [`AuditRow`]'s columns as the driver decodes them.
type AuditColumns<D> = (
    i64,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    <D as OperatorDialect>::Text,
    Option<<D as OperatorDialect>::Text>,
    <D as OperatorDialect>::Token,
    <D as OperatorDialect>::Token,
);

/// Running the operator's reading statements, on any dialect whose driver decodes their
/// columns.
pub trait OperatorRows: OperatorDialect {
    /// Runs a statement returning live leases' rows (see
    /// [`OperatorStatements`](super::OperatorStatements)).
    fn held_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> impl Future<Output = std::result::Result<Vec<HeldRow>, sqlx::Error>> + Send + 'a;

    /// Runs a statement returning audit rows (see
    /// [`OperatorStatements`](super::OperatorStatements)).
    fn audit_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> impl Future<Output = std::result::Result<Vec<AuditRow>, sqlx::Error>> + Send + 'a;
}

impl<DB> OperatorRows for DB
where
    DB: OperatorDialect,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    async fn held_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> std::result::Result<Vec<HeldRow>, sqlx::Error> {
        let rows: Vec<HeldColumns<DB>> = sqlx::query_as_with(sql, arguments::<DB>(args)?)
            .fetch_all(pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(lock_key, name, owner, fence, label, acquired_us, left_us)| HeldRow {
                    lock_key: DB::text(lock_key),
                    name: DB::text(name),
                    owner: DB::text(owner),
                    fence: DB::token(fence),
                    label: label.map(DB::text),
                    acquired_us,
                    left_us,
                },
            )
            .collect())
    }

    async fn audit_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> std::result::Result<Vec<AuditRow>, sqlx::Error> {
        let rows: Vec<AuditColumns<DB>> = sqlx::query_as_with(sql, arguments::<DB>(args)?)
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
                    name: DB::text(name),
                    primitive: DB::text(primitive),
                    operator: DB::text(operator),
                    reason: DB::text(reason),
                    old_owner: DB::text(old_owner),
                    old_kind: DB::text(old_kind),
                    old_label: old_label.map(DB::text),
                    old_token: DB::token(old_token),
                    new_token: DB::token(new_token),
                },
            )
            .collect())
    }
}
