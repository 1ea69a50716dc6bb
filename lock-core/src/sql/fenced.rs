//! The SQL pattern of a fenced resource: a token column and a conditional `UPDATE`.

use crate::{LockError, Result};

/// The SQL dialect to build for (placeholders and identifier quoting differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqlDialect {
    /// `$n` placeholders, `"quoted"` identifiers.
    Postgres,
    /// `?` placeholders, `` `quoted` `` identifiers (MySQL, MariaDB).
    MySql,
}

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
/// placeholders.
///
/// ```
/// use lock_core::fenced::{FencedUpdate, SqlDialect};
///
/// let sql = FencedUpdate::new(SqlDialect::MySql, "shop.stock", "sku", "fence")
///     .set("available")
///     .set("sold")
///     .build()
///     .unwrap();
/// assert_eq!(
///     sql,
///     "UPDATE `shop`.`stock` SET `available` = ?, `sold` = ?, `fence` = ? WHERE `sku` = ? AND `fence` <= ?"
/// );
/// assert!(FencedUpdate::new(SqlDialect::Postgres, "stock; DROP TABLE x", "sku", "fence").set("a").build().is_err());
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct FencedUpdate {
    dialect: SqlDialect,
    table: String,
    key_column: String,
    fence_column: String,
    columns: Vec<String>,
}

impl FencedUpdate {
    /// An update of `table`'s row whose `key_column` matches, fenced by `fence_column`.
    pub fn new(
        dialect: SqlDialect,
        table: impl Into<String>,
        key_column: impl Into<String>,
        fence_column: impl Into<String>,
    ) -> Self {
        Self {
            dialect,
            table: table.into(),
            key_column: key_column.into(),
            fence_column: fence_column.into(),
            columns: Vec::new(),
        }
    }

    /// Adds a column the write sets (bound in the order added).
    pub fn set(mut self, column: impl Into<String>) -> Self {
        self.columns.push(column.into());
        self
    }

    /// The statement, or [`LockError::InvalidInput`] naming the first bad identifier (or no
    /// column to set).
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
                self.placeholder(index + 1)
            ));
        }
        let n = self.columns.len();
        let (token, key_value, token_again) = match self.dialect {
            SqlDialect::Postgres => (
                self.placeholder(n + 1),
                self.placeholder(n + 2),
                self.placeholder(n + 1),
            ),
            SqlDialect::MySql => ("?".to_owned(), "?".to_owned(), "?".to_owned()),
        };
        assignments.push(format!("{fence} = {token}"));
        Ok(format!(
            "UPDATE {table} SET {} WHERE {key} = {key_value} AND {fence} <= {token_again}",
            assignments.join(", ")
        ))
    }

    fn placeholder(&self, n: usize) -> String {
        match self.dialect {
            SqlDialect::Postgres => format!("${n}"),
            SqlDialect::MySql => "?".to_owned(),
        }
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
        Ok(match self.dialect {
            SqlDialect::Postgres => format!("\"{name}\""),
            SqlDialect::MySql => format!("`{name}`"),
        })
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
