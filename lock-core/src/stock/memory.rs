//! Stock in this process's memory, with the same semantics as the Redis store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::order_reused;
use super::OrderLine;
use super::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, Deduction, Reservation, ReserveOutcome,
    StockLevel, StockStore, UNKNOWN_SKU_RETENTION,
};
use crate::lock::held::lock;
use crate::Result;

/// Stock kept in memory; clones share it.
///
/// A SKU that was never restocked keeps no state for reads, and its refused orders only for
/// [`UNKNOWN_SKU_RETENTION`] after the last one (as in Redis), so requests naming random SKUs
/// cannot grow the map without bound.
///
/// For one process (tests, a single instance); several instances share a
/// `RedisStock` (feature `redis`) instead. Clones see the same stock:
///
/// ```
/// use lock_core::stock::{DeductOutcome, MemoryStock, Stock};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let shared = MemoryStock::new();
/// let (shop, warehouse) = (Stock::new(shared.clone()), Stock::new(shared));
/// warehouse.restock("sku-1", 1).await?;
/// let sold = shop.deduct("sku-1", 1, "order-a").await?;
/// assert_eq!(sold.outcome, DeductOutcome::Deducted { remaining: 0 });
/// let late = shop.deduct("sku-1", 1, "order-b").await?;
/// assert_eq!(late.outcome, DeductOutcome::OutOfStock { available: 0 });
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MemoryStock {
    skus: Arc<Mutex<HashMap<String, Sku>>>,
    calls: Arc<AtomicU64>,
}

#[derive(Default)]
struct Sku {
    level: StockLevel,
    /// Order id -> (quantity, first outcome).
    deductions: HashMap<String, (u64, DeductOutcome)>,
    reservations: HashMap<String, Held>,
    /// Restocked at least once: its records are kept.
    stocked: bool,
    /// For a SKU never restocked: when its records are forgotten.
    forget_at: Option<Instant>,
}

/// How often (in operations) forgotten SKUs are swept out.
const SWEEP_EVERY: u64 = 1024;

struct Held {
    quantity: u64,
    first: ReserveOutcome,
    state: HeldState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HeldState {
    Live(Instant),
    Confirmed,
    Cancelled,
    Expired,
    Refused,
}

impl Sku {
    /// Returns the units of reservations whose time is up.
    fn expire(&mut self, now: Instant) {
        for held in self.reservations.values_mut() {
            if matches!(held.state, HeldState::Live(until) if until <= now) {
                held.state = HeldState::Expired;
                self.level.reserved -= held.quantity;
                self.level.available += held.quantity;
            }
        }
    }
}

impl MemoryStock {
    /// Empty stock.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many SKUs have any state (for tests and operators).
    #[must_use]
    pub fn sku_count(&self) -> usize {
        lock(&self.skus).len()
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Sku) -> T) -> T {
        let now = Instant::now();
        let mut skus = lock(&self.skus);
        if self
            .calls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            skus.retain(|_, sku| sku.forget_at.is_none_or(|at| at > now));
        }
        let sku = skus.entry(name.to_owned()).or_default();
        sku.expire(now);
        let records = sku.deductions.len() + sku.reservations.len();
        let out = f(sku);
        if !sku.stocked {
            let written = sku.deductions.len() + sku.reservations.len();
            if written == 0 {
                skus.remove(name);
            } else if written != records {
                sku.forget_at = Some(now + UNKNOWN_SKU_RETENTION);
            }
        }
        out
    }
}

impl StockStore for MemoryStock {
    async fn restock(&self, sku: &str, quantity: u64) -> Result<StockLevel> {
        let level = self.with(sku, |s| {
            s.stocked = true;
            s.forget_at = None;
            s.level.available += quantity;
            s.level.received += quantity;
            s.level
        });
        Ok(level)
    }

    async fn deduct(&self, line: OrderLine<'_>) -> Result<Deduction> {
        self.with(line.sku, |s| {
            if let Some(&(first_quantity, outcome)) = s.deductions.get(line.order) {
                if first_quantity != line.quantity {
                    return Err(order_reused(line.order, first_quantity, line.quantity));
                }
                return Ok(Deduction {
                    outcome,
                    duplicate: true,
                });
            }
            let outcome = if s.level.available >= line.quantity {
                s.level.available -= line.quantity;
                s.level.sold += line.quantity;
                DeductOutcome::Deducted {
                    remaining: s.level.available,
                }
            } else {
                DeductOutcome::OutOfStock {
                    available: s.level.available,
                }
            };
            s.deductions
                .insert(line.order.to_owned(), (line.quantity, outcome));
            Ok(Deduction {
                outcome,
                duplicate: false,
            })
        })
    }

    async fn reserve(&self, line: OrderLine<'_>, ttl: Duration) -> Result<Reservation> {
        self.with(line.sku, |s| {
            if let Some(held) = s.reservations.get(line.order) {
                if held.quantity != line.quantity {
                    return Err(order_reused(line.order, held.quantity, line.quantity));
                }
                return Ok(Reservation {
                    outcome: held.first,
                    duplicate: true,
                });
            }
            let (outcome, state) = if s.level.available >= line.quantity {
                s.level.available -= line.quantity;
                s.level.reserved += line.quantity;
                (
                    ReserveOutcome::Reserved {
                        remaining: s.level.available,
                    },
                    HeldState::Live(Instant::now() + ttl),
                )
            } else {
                (
                    ReserveOutcome::OutOfStock {
                        available: s.level.available,
                    },
                    HeldState::Refused,
                )
            };
            s.reservations.insert(
                line.order.to_owned(),
                Held {
                    quantity: line.quantity,
                    first: outcome,
                    state,
                },
            );
            Ok(Reservation {
                outcome,
                duplicate: false,
            })
        })
    }

    async fn confirm(&self, sku: &str, order: &str) -> Result<ConfirmOutcome> {
        let outcome = self.with(sku, |s| {
            let Some(held) = s.reservations.get_mut(order) else {
                return ConfirmOutcome::Unknown;
            };
            match held.state {
                HeldState::Live(_) => {
                    held.state = HeldState::Confirmed;
                    s.level.reserved -= held.quantity;
                    s.level.sold += held.quantity;
                    ConfirmOutcome::Confirmed
                }
                HeldState::Confirmed => ConfirmOutcome::AlreadyConfirmed,
                HeldState::Cancelled => ConfirmOutcome::Cancelled,
                HeldState::Expired => ConfirmOutcome::Expired,
                HeldState::Refused => ConfirmOutcome::Unknown,
            }
        });
        Ok(outcome)
    }

    async fn cancel(&self, sku: &str, order: &str) -> Result<CancelOutcome> {
        let outcome = self.with(sku, |s| {
            let Some(held) = s.reservations.get_mut(order) else {
                return CancelOutcome::Unknown;
            };
            match held.state {
                HeldState::Live(_) => {
                    held.state = HeldState::Cancelled;
                    s.level.reserved -= held.quantity;
                    s.level.available += held.quantity;
                    CancelOutcome::Cancelled
                }
                HeldState::Cancelled | HeldState::Expired => CancelOutcome::AlreadyReleased,
                HeldState::Confirmed => CancelOutcome::AlreadyConfirmed,
                HeldState::Refused => CancelOutcome::Unknown,
            }
        });
        Ok(outcome)
    }

    async fn level(&self, sku: &str) -> Result<StockLevel> {
        let level = self.with(sku, |s| s.level);
        Ok(level)
    }
}
