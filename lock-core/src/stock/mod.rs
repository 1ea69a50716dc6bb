//! Stock: atomic, idempotent inventory deduction and reservations, for flash sales where a
//! stock of N must sell exactly N.
//!
//! Every operation is one atomic step in the store (one Lua script on Redis, one critical
//! section in memory, one transaction in SQL) that also records the order id and quantity, so
//! a retried order returns its first outcome and never deducts twice; the same order id with
//! another quantity is refused with [`LockError::InvalidInput`] (`what: "order id"`), never
//! answered as a duplicate. A restock carries an id of its own the same way: retried, it adds
//! nothing. Records are kept for the store's retention ([`DEFAULT_RETENTION`], a week): the
//! window in which a retry is recognised. Reservations hold units for a TTL measured by the
//! store's clock; an unconfirmed one returns to stock when it runs out.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::stock::{DeductOutcome, Stock};
//! use lock_core::memory::MemoryStock;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! let stock = Stock::new(MemoryStock::new());
//! let delivery = stock.restock("sku-1", 2, "delivery-7").await?;
//! assert!(!delivery.duplicate && delivery.level.available == 2);
//! assert!(stock.restock("sku-1", 2, "delivery-7").await?.duplicate); // retried: nothing added
//! let first = stock.deduct("sku-1", 1, "order-a").await?;
//! assert_eq!(first.outcome, DeductOutcome::Deducted { remaining: 1 });
//! let retry = stock.deduct("sku-1", 1, "order-a").await?;      // same order id: no second deduction
//! assert!(retry.duplicate && retry.outcome == first.outcome);
//! stock.reserve("sku-1", 1, "order-b", Duration::from_secs(60)).await?;
//! stock.confirm("sku-1", "order-b").await?;
//! assert!(stock.audit("sku-1").await?.is_balanced());
//! # Ok(()) }
//! ```

mod builder;
mod order_line;
mod store;

use std::sync::Arc;
use std::time::Duration;

pub use self::builder::StockBuilder;
pub use self::order_line::OrderLine;
pub use self::store::{DynStockStore, StockStore};
use crate::{LockError, LockKey, Result};

/// The largest quantity one operation accepts.
pub const MAX_QUANTITY: u64 = 1_000_000_000;

/// How long a store keeps the record of a request by default ([`MemoryStock::with_retention`](crate::memory::MemoryStock::with_retention),
/// `RedisStock::with_retention`, `SqlStockBuilder::retention` change it): the window in which
/// a retry with the same order id (or restock id) is recognised and answered with the first
/// outcome. A week, far longer than any client retries.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The longest retention a store accepts (ten years).
pub const MAX_RETENTION: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// How long the records of a SKU that was never restocked (refused orders naming it) are
/// kept at most, when the retention is longer: requests naming random SKUs leave little, and
/// nothing that lives long.
pub const UNKNOWN_SKU_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest order id (or restock id) accepted, in bytes.
pub const MAX_ORDER_ID_LEN: usize = 256;

/// What a restock did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restock {
    /// The SKU's level now: after this restock, or as it is when this one is a duplicate.
    pub level: StockLevel,
    /// True when this restock id had been seen: nothing was added now.
    pub duplicate: bool,
}

/// What a deduction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeductOutcome {
    /// The units were taken; `remaining` were available afterwards.
    Deducted {
        /// Units available after this deduction.
        remaining: u64,
    },
    /// Fewer than the asked units were available; nothing was taken.
    OutOfStock {
        /// Units available at the time.
        available: u64,
    },
}

/// A deduction's outcome, and whether it is the recorded outcome of an earlier call with the
/// same order id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deduction {
    /// What happened (the first time, for a duplicate).
    pub outcome: DeductOutcome,
    /// True when this order id had been seen: nothing was done now.
    pub duplicate: bool,
}

/// What a reservation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReserveOutcome {
    /// The units are held for the order until confirmed, cancelled or expired.
    Reserved {
        /// Units available after this reservation.
        remaining: u64,
    },
    /// Fewer than the asked units were available; nothing was held.
    OutOfStock {
        /// Units available at the time.
        available: u64,
    },
}

/// A reservation's outcome, and whether it repeats an earlier call with the same order id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// What happened (the first time, for a duplicate).
    pub outcome: ReserveOutcome,
    /// True when this order id had been seen: nothing was done now.
    pub duplicate: bool,
}

/// What confirming a reservation did. Only `Confirmed` and `AlreadyConfirmed` mean sold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfirmOutcome {
    /// The reserved units are now sold.
    Confirmed,
    /// Confirmed before; nothing changed.
    AlreadyConfirmed,
    /// Refused: the reservation ran out and its units went back to stock.
    Expired,
    /// Refused: the reservation was cancelled.
    Cancelled,
    /// Refused: no reservation with this order id (or it was out of stock).
    Unknown,
}

/// What cancelling a reservation did; cancelling is idempotent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The reserved units went back to stock.
    Cancelled,
    /// Cancelled (or expired) before; nothing changed.
    AlreadyReleased,
    /// Refused: the reservation was confirmed, the units are sold.
    AlreadyConfirmed,
    /// No reservation with this order id.
    Unknown,
}

/// Where the units of one SKU are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StockLevel {
    /// Units that can be deducted or reserved now.
    pub available: u64,
    /// Units held by live reservations.
    pub reserved: u64,
    /// Units deducted or confirmed.
    pub sold: u64,
    /// Units ever restocked.
    pub received: u64,
}

impl StockLevel {
    /// The audit: every unit received is available, reserved or sold, exactly once.
    #[must_use]
    pub fn is_balanced(&self) -> bool {
        self.available
            .checked_add(self.reserved)
            .and_then(|n| n.checked_add(self.sold))
            == Some(self.received)
    }
}

/// Stock operations on one store, with validated names. Cheap to clone.
#[derive(Clone)]
pub struct Stock {
    store: Arc<dyn DynStockStore>,
    namespace: String,
}

impl Stock {
    /// Stock in `store`, with no namespace.
    pub fn new(store: impl StockStore + 'static) -> Self {
        Self {
            store: Arc::new(store),
            namespace: String::new(),
        }
    }

    /// Starts configuring stock operations on `store` (a namespace for every SKU).
    pub fn builder(store: impl StockStore + 'static) -> StockBuilder {
        StockBuilder {
            store: Arc::new(store),
            namespace: String::new(),
        }
    }

    fn sku(&self, sku: &str) -> Result<LockKey> {
        LockKey::new(&self.namespace, sku)
    }

    /// Adds `quantity` units to `sku`, once per `restock_id` (the delivery's or the
    /// request's id, as an order id is the order's): a retry with the same id within the
    /// store's retention adds nothing and answers `duplicate` with the current level.
    ///
    /// A restock id already used for `sku` with another quantity is refused with
    /// [`LockError::InvalidInput`] (`what: "restock id"`); the id must be 1..=
    /// [`MAX_ORDER_ID_LEN`] bytes without NUL, the quantity in `1..=`[`MAX_QUANTITY`].
    pub async fn restock(&self, sku: &str, quantity: u64, restock_id: &str) -> Result<Restock> {
        let sku = self.sku(sku)?;
        check_quantity(quantity)?;
        check_id("restock id", restock_id)?;
        let line = OrderLine {
            sku: sku.full(),
            quantity,
            order: restock_id,
        };
        self.store.restock(line).await.map_err(|e| named(e, &sku))
    }

    /// Takes `quantity` units of `sku` for `order` if that many are available; a retried
    /// order id returns its first outcome with `duplicate` set.
    ///
    /// An order id already used for `sku` with another quantity is refused with
    /// [`LockError::InvalidInput`] (`what: "order id"`); a quantity outside
    /// `1..=`[`MAX_QUANTITY`] with [`LockError::InvalidInput`] (`what: "quantity"`).
    pub async fn deduct(&self, sku: &str, quantity: u64, order: &str) -> Result<Deduction> {
        let sku = self.sku(sku)?;
        check_quantity(quantity)?;
        check_order(order)?;
        let line = OrderLine {
            sku: sku.full(),
            quantity,
            order,
        };
        self.store.deduct(line).await.map_err(|e| named(e, &sku))
    }

    /// Holds `quantity` units of `sku` for `order` for `ttl`; confirm or cancel it before then.
    ///
    /// A retried order id returns its first outcome with `duplicate` set; one already used for
    /// `sku` with another quantity is refused as in [`deduct`](Self::deduct).
    pub async fn reserve(
        &self,
        sku: &str,
        quantity: u64,
        order: &str,
        ttl: Duration,
    ) -> Result<Reservation> {
        let sku = self.sku(sku)?;
        check_quantity(quantity)?;
        check_order(order)?;
        crate::lease::validate_ttl(ttl)?;
        let line = OrderLine {
            sku: sku.full(),
            quantity,
            order,
        };
        self.store
            .reserve(line, ttl)
            .await
            .map_err(|e| named(e, &sku))
    }

    /// Sells `order`'s reservation; refused after it expired or was cancelled.
    pub async fn confirm(&self, sku: &str, order: &str) -> Result<ConfirmOutcome> {
        let sku = self.sku(sku)?;
        check_order(order)?;
        self.store.confirm(sku.full(), order).await
    }

    /// Returns `order`'s reservation to stock; idempotent, refused once confirmed.
    pub async fn cancel(&self, sku: &str, order: &str) -> Result<CancelOutcome> {
        let sku = self.sku(sku)?;
        check_order(order)?;
        self.store.cancel(sku.full(), order).await
    }

    /// The current level of `sku`.
    pub async fn level(&self, sku: &str) -> Result<StockLevel> {
        let sku = self.sku(sku)?;
        self.store.level(sku.full()).await
    }

    /// The current level of `sku`; check it with [`StockLevel::is_balanced`]
    /// (`received = available + reserved + sold`).
    pub async fn audit(&self, sku: &str) -> Result<StockLevel> {
        self.level(sku).await
    }
}

/// A store's error for `sku`, naming the SKU as the caller did (without the namespace), as
/// [`LockError::Busy`]'s key is documented; a store knows only the namespaced key.
fn named(error: LockError, sku: &LockKey) -> LockError {
    match error {
        LockError::Busy { waited, .. } => LockError::Busy {
            key: sku.name().to_owned(),
            waited,
        },
        other => other,
    }
}

fn check_quantity(quantity: u64) -> Result<()> {
    if quantity == 0 || quantity > MAX_QUANTITY {
        return Err(LockError::InvalidInput {
            what: "quantity",
            reason: format!("{quantity} is outside 1..={MAX_QUANTITY}"),
        });
    }
    Ok(())
}

/// The refusal of an order id already recorded with `first` units, asked again for `asked`.
pub(crate) fn order_reused(order: &str, first: u64, asked: u64) -> LockError {
    id_reused("order id", order, first, asked)
}

/// The refusal of a restock id already recorded with `first` units, asked again for `asked`.
pub(crate) fn restock_reused(id: &str, first: u64, asked: u64) -> LockError {
    id_reused("restock id", id, first, asked)
}

fn id_reused(what: &'static str, id: &str, first: u64, asked: u64) -> LockError {
    LockError::InvalidInput {
        what,
        reason: format!(
            "{:?} was already used with quantity {first}, not {asked}; a retry repeats the \
             first request, another request needs another id",
            id.chars().take(64).collect::<String>()
        ),
    }
}

/// Refuses a retention outside 1 ms..=[`MAX_RETENTION`].
pub(crate) fn check_retention(retention: Duration) -> Result<()> {
    if retention < Duration::from_millis(1) || retention > MAX_RETENTION {
        return Err(LockError::InvalidConfig(format!(
            "a stock's retention of {retention:?} is outside 1 ms..={MAX_RETENTION:?}"
        )));
    }
    Ok(())
}

fn check_order(order: &str) -> Result<()> {
    check_id("order id", order)
}

/// Refuses an order or restock id that is empty, longer than [`MAX_ORDER_ID_LEN`] or holds a
/// NUL.
fn check_id(what: &'static str, id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_ORDER_ID_LEN || id.contains('\0') {
        return Err(LockError::InvalidInput {
            what,
            reason: format!(
                "{:?} must be 1..={MAX_ORDER_ID_LEN} bytes without NUL",
                id.chars().take(64).collect::<String>()
            ),
        });
    }
    Ok(())
}
