//! The SQL pattern of a fenced resource: a token column and a conditional `UPDATE`, on either
//! database (see [`crate::fenced`] for what fencing is).

use std::marker::PhantomData;

use super::Dialect;
use crate::{LockError, Result};

/// Builds the `UPDATE` that applies a write only when the writer's fencing token is at least
/// the one stored in the row: the row keeps the token of its last write in a 64-bit column
/// (`BIGINT`; tokens are `u64`, bind them as `i64` after checking they fit, or use
/// `NUMERIC(20)`), and a stale holder's write matches no row.
///
/// The statement is `UPDATE t SET c1 = ?, …, fence = <token> WHERE key = <key> AND fence <=
/// <token>`: equal tokens pass, so one holder may write several times under one lease. Zero
/// rows affected means refused (or no such row: insert rows with fence 0 first). Bind order:
/// - PostgreSQL: the `set` values in order, then the token, then the key (`$n` reused).
/// - MySQL: the `set` values in order, the token, the key, the token again.
///
/// Identifiers are checked (letters, digits, `_`, not starting with a digit, at most 63 bytes,
/// optionally `schema.table`) and quoted, so a name can never inject SQL; values are only ever
/// placeholders. The database is the type parameter `D`, as in [`SqlBackend<D>`](super::SqlBackend):
/// `sqlx::Postgres` (`$n` placeholders, `"quoted"` identifiers) or `sqlx::MySql` (`?`
/// placeholders, `` `quoted` `` identifiers; MariaDB too).
///
/// ```
/// # #[cfg(all(feature = "postgres", feature = "mysql"))] {
/// use lock_core::sql::FencedUpdate;
///
/// let sql = FencedUpdate::<sqlx::MySql>::new("shop.stock", "sku", "fence")
///     .set("available")
///     .set("sold")
///     .build()
///     .unwrap();
/// assert_eq!(
///     sql,
///     "UPDATE `shop`.`stock` SET `available` = ?, `sold` = ?, `fence` = ? WHERE `sku` = ? AND `fence` <= ?"
/// );
/// assert!(FencedUpdate::<sqlx::Postgres>::new("stock; DROP TABLE x", "sku", "fence").set("a").build().is_err());
/// # }
/// ```
#[must_use]
pub struct FencedUpdate<D: Dialect> {
    table: String,
    key_column: String,
    fence_column: String,
    columns: Vec<String>,
    dialect: PhantomData<fn() -> D>,
}

impl<D: Dialect> Clone for FencedUpdate<D> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            key_column: self.key_column.clone(),
            fence_column: self.fence_column.clone(),
            columns: self.columns.clone(),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> std::fmt::Debug for FencedUpdate<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedUpdate")
            .field("dialect", &D::BACKEND)
            .field("table", &self.table)
            .field("key_column", &self.key_column)
            .field("fence_column", &self.fence_column)
            .field("columns", &self.columns)
            .finish()
    }
}

impl<D: Dialect> FencedUpdate<D> {
    /// An update of `table`'s row whose `key_column` matches, fenced by `fence_column`, in
    /// database `D`.
    ///
    /// ```
    /// # #[cfg(feature = "postgres")] {
    /// let update = lock_core::sql::FencedUpdate::<sqlx::Postgres>::new("stock", "sku", "fence");
    /// # let _ = update; }
    /// ```
    pub fn new(
        table: impl Into<String>,
        key_column: impl Into<String>,
        fence_column: impl Into<String>,
    ) -> Self {
        Self {
            table: table.into(),
            key_column: key_column.into(),
            fence_column: fence_column.into(),
            columns: Vec::new(),
            dialect: PhantomData,
        }
    }

    /// Adds a column the write sets (bound in the order added).
    ///
    /// ```
    /// # #[cfg(feature = "postgres")] {
    /// let update = lock_core::sql::FencedUpdate::<sqlx::Postgres>::new("stock", "sku", "fence")
    ///     .set("available");
    /// # let _ = update; }
    /// ```
    pub fn set(mut self, column: impl Into<String>) -> Self {
        self.columns.push(column.into());
        self
    }

    /// The statement, or [`LockError::InvalidInput`] naming the first bad identifier (or no
    /// column to set).
    ///
    /// ```
    /// # #[cfg(feature = "postgres")] {
    /// let sql = lock_core::sql::FencedUpdate::<sqlx::Postgres>::new("stock", "sku", "fence")
    ///     .set("available")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(
    ///     sql,
    ///     r#"UPDATE "stock" SET "available" = $1, "fence" = $2 WHERE "sku" = $3 AND "fence" <= $2"#
    /// );
    /// # }
    /// ```
    pub fn build(&self) -> Result<String> {
        if self.columns.is_empty() {
            return Err(LockError::InvalidInput {
                what: "fenced update",
                reason: "no column to set".into(),
            });
        }
        let table = self.quote_path(&self.table)?;
        let key = self.quote(&self.key_column)?;
        let fence = self.quote(&self.fence_column)?;
        let mut assignments = Vec::with_capacity(self.columns.len() + 1);
        for (index, column) in self.columns.iter().enumerate() {
            assignments.push(format!(
                "{} = {}",
                self.quote(column)?,
                D::placeholder(index + 1)
            ));
        }
        let n = self.columns.len();
        // `$n` placeholders name the token twice; `?` ones are bound twice.
        let (token, key_value, token_again) = (
            D::placeholder(n + 1),
            D::placeholder(n + 2),
            D::placeholder(n + 1),
        );
        assignments.push(format!("{fence} = {token}"));
        Ok(format!(
            "UPDATE {table} SET {} WHERE {key} = {key_value} AND {fence} <= {token_again}",
            assignments.join(", ")
        ))
    }

    fn quote_path(&self, path: &str) -> Result<String> {
        let parts: Vec<&str> = path.split('.').collect();
        if parts.len() > 2 {
            return Err(bad_identifier(path));
        }
        let quoted: Result<Vec<String>> = parts.into_iter().map(|p| self.quote(p)).collect();
        Ok(quoted?.join("."))
    }

    fn quote(&self, name: &str) -> Result<String> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(bad_identifier(name));
        }
        Ok(D::quote(name))
    }
}

fn bad_identifier(name: &str) -> LockError {
    LockError::InvalidInput {
        what: "SQL identifier",
        reason: format!(
            "{name:?}: letters, digits and _, not starting with a digit, at most 63 bytes \
             (a table may be schema.table)"
        ),
    }
}
