//! [`StockStrategy`]: how a SQL store takes units from a SKU's row.

use std::fmt;
use std::str::FromStr;

use crate::LockError;

/// How a [`SqlStock`](super::SqlStock) takes units (deductions and reservations) from a SKU's
/// row. Every strategy records the order in the same transaction as the units it takes, under
/// the orders table's primary key `(sku, kind, order_id)`: a retried order can never take
/// twice, whatever the strategy, and a crash before the commit takes nothing.
///
/// ```
/// use lock_core::sql::StockStrategy;
///
/// let strategy: StockStrategy = "for-update".parse()?;
/// assert_eq!(strategy, StockStrategy::ForUpdate);
/// assert_eq!(StockStrategy::Optimistic.to_string(), "optimistic");
/// assert!("pessimistic".parse::<StockStrategy>().is_err());
/// # Ok::<(), lock_core::LockError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StockStrategy {
    /// Pessimistic: `SELECT ... FOR UPDATE` on the SKU's row, then the update and the order's
    /// record, in one transaction. Buyers of one SKU queue on its row lock for the whole
    /// transaction (four round trips).
    ForUpdate,
    /// Optimistic: read the row's `version` without a lock, then update only if it is still
    /// that version (compare-and-set), with the order's record in the same transaction. A
    /// buyer that lost the race reads again after a jittered pause, up to
    /// [`attempts`](super::SqlStockBuilder::attempts) times, then gets
    /// [`LockError::Busy`]. Nothing waits on a lock; under contention most tries are lost.
    Optimistic,
    /// Conditional update (the default): `UPDATE ... SET available = available - n WHERE
    /// available >= n` as the transaction's first statement, then the order's record: no read
    /// before the write, the row lock held from the update to the commit only.
    #[default]
    Conditional,
}

impl StockStrategy {
    /// Every strategy, in the order the demo and the bench print them.
    pub const ALL: [Self; 3] = [Self::ForUpdate, Self::Optimistic, Self::Conditional];

    /// The strategy's name on the command line: `for-update`, `optimistic`, `conditional`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ForUpdate => "for-update",
            Self::Optimistic => "optimistic",
            Self::Conditional => "conditional",
        }
    }
}

impl fmt::Display for StockStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StockStrategy {
    type Err = LockError;

    fn from_str(name: &str) -> Result<Self, LockError> {
        Self::ALL
            .into_iter()
            .find(|strategy| strategy.name() == name)
            .ok_or_else(|| LockError::InvalidInput {
                what: "stock strategy",
                reason: format!(
                    "{:?} is not one of for-update, optimistic, conditional",
                    name.chars().take(32).collect::<String>()
                ),
            })
    }
}
