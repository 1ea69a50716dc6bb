//! [`StockBuilder`]: the settings of a [`Stock`], checked when it is built.

use std::sync::Arc;

use super::{DynStockStore, Stock};
use crate::backend::key::validate_namespace;
use crate::Result;

/// Configures a [`Stock`]; from [`Stock::builder`].
///
/// ```
/// use lock_core::memory::MemoryStock;
/// use lock_core::stock::Stock;
///
/// let stock = Stock::builder(MemoryStock::new()).namespace("shop").build()?;
/// # let _ = stock;
/// # Ok::<(), lock_core::LockError>(())
/// ```
#[must_use]
pub struct StockBuilder {
    pub(super) store: Arc<dyn DynStockStore>,
    pub(super) namespace: String,
}

impl StockBuilder {
    /// Places every SKU under `namespace` (as [`crate::LockClientBuilder::namespace`]: ASCII
    /// letters, digits, `-`, `_` and `.`, at most 64 bytes; empty, the default, is no
    /// namespace).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The stock operations; [`LockError::InvalidConfig`](crate::LockError::InvalidConfig)
    /// or [`InvalidKey`](crate::LockError::InvalidKey) for a namespace out of the rules.
    pub fn build(self) -> Result<Stock> {
        validate_namespace(&self.namespace)?;
        Ok(Stock {
            store: self.store,
            namespace: self.namespace,
        })
    }
}
