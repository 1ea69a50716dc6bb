//! Stock in this process's memory, with the same semantics as the Redis store.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::stock::OrderLine;
use crate::stock::{check_retention, order_reused, restock_reused, DEFAULT_RETENTION};
use crate::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, Deduction, Reservation, ReserveOutcome, Restock,
    StockLevel, StockStore, UNKNOWN_SKU_RETENTION,
};
use crate::sync::lock;
use crate::Result;

/// Stock kept in memory; clones share it.
///
/// Each record (an order's first outcome) is kept for the retention ([`DEFAULT_RETENTION`]
/// unless [`with_retention`](Self::with_retention) says otherwise) from the moment it is final
/// (a deduction, a restock or a refused reservation when made; a reservation when confirmed,
/// cancelled or run out, never while it holds units), as in Redis: a retry inside that window gets the
/// first outcome, and each call forgets the SKU's records whose time is up, the oldest first,
/// at most 128 (a sweep every 1,024 calls does the same for every SKU). A SKU that was never
/// restocked keeps no state for reads, and its refused orders only for
/// [`UNKNOWN_SKU_RETENTION`] (or the retention, if shorter) after the last one, so requests
/// naming random SKUs cannot grow the map without bound.
///
/// For one process (tests, a single instance); several instances share a
/// `RedisStock` (feature `redis`) instead. Clones see the same stock:
///
/// ```
/// use lock_core::stock::{DeductOutcome, Stock};
/// use lock_core::memory::MemoryStock;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let shared = MemoryStock::new();
/// let (shop, warehouse) = (Stock::new(shared.clone()), Stock::new(shared));
/// warehouse.restock("sku-1", 1, "delivery-1").await?;
/// let sold = shop.deduct("sku-1", 1, "order-a").await?;
/// assert_eq!(sold.outcome, DeductOutcome::Deducted { remaining: 0 });
/// let late = shop.deduct("sku-1", 1, "order-b").await?;
/// assert_eq!(late.outcome, DeductOutcome::OutOfStock { available: 0 });
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MemoryStock {
    skus: Arc<Mutex<HashMap<String, Sku>>>,
    calls: Arc<AtomicU64>,
    retention: Duration,
}

impl Default for MemoryStock {
    fn default() -> Self {
        Self {
            skus: Arc::default(),
            calls: Arc::default(),
            retention: DEFAULT_RETENTION,
        }
    }
}

#[derive(Default)]
struct Sku {
    level: StockLevel,
    /// Order id -> (quantity, first outcome).
    deductions: HashMap<Arc<str>, (u64, DeductOutcome)>,
    reservations: HashMap<Arc<str>, Held>,
    /// Restock id -> quantity.
    restocks: HashMap<Arc<str>, u64>,
    /// The live reservations by when they run out.
    live: BTreeSet<(Instant, Arc<str>)>,
    /// Every final record (all but live reservations), oldest first: when it became final.
    timeline: VecDeque<(Instant, Kind, Arc<str>)>,
    /// Restocked at least once.
    stocked: bool,
    /// For a SKU never restocked: when its records are forgotten.
    forget_at: Option<Instant>,
}

/// What a record of the timeline is.
#[derive(Clone, Copy)]
enum Kind {
    Deduction,
    Reservation,
    Restock,
}

/// How often (in operations) every SKU is swept: forgotten SKUs removed, due records of the
/// others forgotten.
const SWEEP_EVERY: u64 = 1024;

/// The most records one call forgets.
const FORGET_PER_CALL: usize = 128;

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
        while let Some((until, order)) = self.live.first().cloned() {
            if until > now {
                return;
            }
            self.live.pop_first();
            if let Some(held) = self.reservations.get_mut(&order) {
                held.state = HeldState::Expired;
                self.level.reserved -= held.quantity;
                self.level.available += held.quantity;
                self.timeline.push_back((now, Kind::Reservation, order));
            }
        }
    }

    /// Forgets the records final for `retention` or longer, the oldest first, at most
    /// [`FORGET_PER_CALL`].
    fn forget_due(&mut self, now: Instant, retention: Duration) {
        for _ in 0..FORGET_PER_CALL {
            match self.timeline.front() {
                Some((at, _, _)) if *at + retention <= now => {}
                _ => return,
            }
            let Some((_, kind, id)) = self.timeline.pop_front() else {
                return;
            };
            match kind {
                Kind::Deduction => drop(self.deductions.remove(&id)),
                Kind::Reservation => drop(self.reservations.remove(&id)),
                Kind::Restock => drop(self.restocks.remove(&id)),
            }
        }
    }

    fn records(&self) -> usize {
        self.deductions.len() + self.reservations.len() + self.restocks.len()
    }

    /// The live reservation `order` is settled: confirmed or cancelled now.
    fn settled(&mut self, order: &str, until: Instant, now: Instant) {
        if let Some((_, id)) = self.live.take(&(until, Arc::from(order))) {
            self.timeline.push_back((now, Kind::Reservation, id));
        }
    }
}

impl MemoryStock {
    /// Empty stock, keeping each record for [`DEFAULT_RETENTION`].
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty stock keeping each record for `retention`: the window in which a retry is
    /// recognised (see the type's docs).
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::memory::MemoryStock;
    ///
    /// let store = MemoryStock::with_retention(Duration::from_secs(24 * 60 * 60))?;
    /// assert!(MemoryStock::with_retention(Duration::ZERO).is_err());
    /// # let _ = store;
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`](crate::LockError::InvalidConfig) outside
    /// 1 ms..=[`MAX_RETENTION`](crate::stock::MAX_RETENTION).
    pub fn with_retention(retention: Duration) -> Result<Self> {
        check_retention(retention)?;
        Ok(Self {
            retention,
            ..Self::default()
        })
    }

    /// How many SKUs have any state (for tests and operators).
    #[must_use]
    pub fn sku_count(&self) -> usize {
        lock(&self.skus).len()
    }

    /// How many records (orders' first outcomes) are kept, over every SKU (for tests and
    /// operators).
    #[must_use]
    pub fn record_count(&self) -> usize {
        lock(&self.skus).values().map(Sku::records).sum()
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Sku, Instant) -> T) -> T {
        let now = Instant::now();
        let retention = self.retention;
        let mut skus = lock(&self.skus);
        if self
            .calls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            skus.retain(|_, sku| {
                sku.expire(now);
                sku.forget_due(now, retention);
                sku.forget_at.is_none_or(|at| at > now)
            });
        }
        let sku = skus.entry(name.to_owned()).or_default();
        sku.expire(now);
        sku.forget_due(now, retention);
        let records = sku.records();
        let out = f(sku, now);
        if !sku.stocked {
            let written = sku.records();
            if written == 0 {
                skus.remove(name);
            } else if written != records {
                sku.forget_at = Some(now + UNKNOWN_SKU_RETENTION.min(retention));
            }
        }
        out
    }
}

impl StockStore for MemoryStock {
    async fn restock(&self, line: OrderLine<'_>) -> Result<Restock> {
        self.with(line.sku, |s, now| {
            if let Some(&first) = s.restocks.get(line.order) {
                if first != line.quantity {
                    return Err(restock_reused(line.order, first, line.quantity));
                }
                return Ok(Restock {
                    level: s.level,
                    duplicate: true,
                });
            }
            s.stocked = true;
            s.forget_at = None;
            s.level.available += line.quantity;
            s.level.received += line.quantity;
            let id: Arc<str> = Arc::from(line.order);
            s.restocks.insert(id.clone(), line.quantity);
            s.timeline.push_back((now, Kind::Restock, id));
            Ok(Restock {
                level: s.level,
                duplicate: false,
            })
        })
    }

    async fn deduct(&self, line: OrderLine<'_>) -> Result<Deduction> {
        self.with(line.sku, |s, now| {
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
            let order: Arc<str> = Arc::from(line.order);
            s.deductions.insert(order.clone(), (line.quantity, outcome));
            s.timeline.push_back((now, Kind::Deduction, order));
            Ok(Deduction {
                outcome,
                duplicate: false,
            })
        })
    }

    async fn reserve(&self, line: OrderLine<'_>, ttl: Duration) -> Result<Reservation> {
        self.with(line.sku, |s, now| {
            if let Some(held) = s.reservations.get(line.order) {
                if held.quantity != line.quantity {
                    return Err(order_reused(line.order, held.quantity, line.quantity));
                }
                return Ok(Reservation {
                    outcome: held.first,
                    duplicate: true,
                });
            }
            let order: Arc<str> = Arc::from(line.order);
            let (outcome, state) = if s.level.available >= line.quantity {
                s.level.available -= line.quantity;
                s.level.reserved += line.quantity;
                let until = now + ttl;
                s.live.insert((until, order.clone()));
                (
                    ReserveOutcome::Reserved {
                        remaining: s.level.available,
                    },
                    HeldState::Live(until),
                )
            } else {
                s.timeline
                    .push_back((now, Kind::Reservation, order.clone()));
                (
                    ReserveOutcome::OutOfStock {
                        available: s.level.available,
                    },
                    HeldState::Refused,
                )
            };
            s.reservations.insert(
                order,
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
        let outcome = self.with(sku, |s, now| {
            let Some(held) = s.reservations.get_mut(order) else {
                return ConfirmOutcome::Unknown;
            };
            match held.state {
                HeldState::Live(until) => {
                    held.state = HeldState::Confirmed;
                    s.level.reserved -= held.quantity;
                    s.level.sold += held.quantity;
                    s.settled(order, until, now);
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
        let outcome = self.with(sku, |s, now| {
            let Some(held) = s.reservations.get_mut(order) else {
                return CancelOutcome::Unknown;
            };
            match held.state {
                HeldState::Live(until) => {
                    held.state = HeldState::Cancelled;
                    s.level.reserved -= held.quantity;
                    s.level.available += held.quantity;
                    s.settled(order, until, now);
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
        let level = self.with(sku, |s, _| s.level);
        Ok(level)
    }
}
