//! Deductions and reservations: taking units from a SKU's row by the store's
//! [`StockStrategy`], with the order's record in the same transaction.

use std::time::Duration;

use tokio::time::Instant;

use super::dialect::{first_number, Arg};
use super::settle::{Found, Settle};
use super::statements::{DEDUCTION, LIVE, NOTHING_HELD, RESERVATION};
use super::{SqlStock, StockStrategy};
use crate::jitter::jitter;
use crate::sql::Dialect;
use crate::stock::{
    order_reused, CancelOutcome, ConfirmOutcome, DeductOutcome, Deduction, OrderLine, Reservation,
    ReserveOutcome, Restock, StockLevel, StockStore,
};
use crate::{LockError, Result};

/// What units are taken for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Purpose {
    /// A deduction: the units are sold.
    Sell,
    /// A reservation held for this long.
    Hold(Duration),
}

impl Purpose {
    fn kind(self) -> i64 {
        match self {
            Self::Sell => DEDUCTION,
            Self::Hold(_) => RESERVATION,
        }
    }
}

/// An order's outcome: whether it took its units, the units left (or available), and whether
/// it was recorded before (a retry).
#[derive(Clone, Copy, Debug)]
pub(super) struct Took {
    taken: bool,
    value: u64,
    duplicate: bool,
}

/// How one try ended.
enum Try {
    /// Recorded now, or found recorded under the row lock.
    Done(Took),
    /// The order's record exists (the primary key refused ours): read its outcome.
    Recorded,
    /// Optimistic only: another buyer changed the row since it was read.
    Lost,
    /// Too few units, but reservations of the SKU ran out and still hold theirs: return
    /// them, then try again (an order's first outcome is final, so it must not be recorded
    /// out of stock while units wait to come back).
    ExpireFirst,
}

impl<D: Dialect> SqlStock<D> {
    /// Takes the line's units for `purpose` (or records that there were too few), once per
    /// order id and kind.
    pub(super) async fn take(&self, line: OrderLine<'_>, purpose: Purpose) -> Result<Took> {
        self.counted();
        let started = Instant::now();
        let busy = || LockError::Busy {
            key: line.sku.to_owned(),
            waited: started.elapsed(),
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let tried = match self.shared.strategy {
                StockStrategy::ForUpdate => self.take_locked(line, purpose).await,
                StockStrategy::Optimistic => self.take_at_version(line, purpose).await,
                StockStrategy::Conditional => self.take_conditional(line, purpose).await,
            };
            match tried {
                Ok(Try::Done(took)) => return Ok(took),
                Ok(Try::Recorded) => {
                    if let Some(took) = self.recorded(line, purpose).await? {
                        return Ok(took);
                    }
                    // Swept since it was found: past its retention, the order is new.
                    if attempt >= self.shared.attempts {
                        return Err(busy());
                    }
                }
                Ok(Try::ExpireFirst) if attempt < self.shared.attempts => {
                    self.expire_due(line.sku).await?;
                }
                Ok(Try::Lost) if attempt < self.shared.attempts => {
                    self.count_retry();
                    // Spread the losers out: a few ms, growing with the tries.
                    let pause = Duration::from_micros(500) * attempt.min(20);
                    tokio::time::sleep(jitter(pause)).await;
                }
                Ok(Try::ExpireFirst | Try::Lost) => return Err(busy()),
                Err(error) => self.on_failure(error, attempt)?,
            }
        }
    }

    /// `SELECT ... FOR UPDATE` on the SKU's row, then the update and the record.
    async fn take_locked(&self, line: OrderLine<'_>, purpose: Purpose) -> Result<Try, sqlx::Error> {
        let st = &self.shared.statements;
        let mut tx = self.shared.pool.begin().await?;
        let level = D::fetch(&mut tx, &st.level_locked, &[Arg::Text(line.sku)]).await?;
        if !D::fetch(&mut tx, &st.order_read, &order_key(line, purpose))
            .await?
            .is_empty()
        {
            tx.rollback().await?;
            return Ok(Try::Recorded);
        }
        let available = first_number(&level);
        let taken = available >= quantity_of(line);
        if taken && self.take_units(&mut tx, line, purpose, None).await? != 1 {
            return Err(sqlx::Error::Protocol(
                "the locked stock row changed under its lock".into(),
            ));
        }
        self.record(tx, line, purpose, taken, left(available, line, taken))
            .await
    }

    /// Reads the row's `version` without a lock; updates only if it is still that version.
    async fn take_at_version(
        &self,
        line: OrderLine<'_>,
        purpose: Purpose,
    ) -> Result<Try, sqlx::Error> {
        let st = &self.shared.statements;
        let (available, version) = {
            let mut conn = self.shared.pool.acquire().await?;
            if !D::fetch(&mut conn, &st.order_read, &order_key(line, purpose))
                .await?
                .is_empty()
            {
                return Ok(Try::Recorded);
            }
            let level = D::fetch(&mut conn, &st.level_read, &[Arg::Text(line.sku)]).await?;
            level.first().map_or((0, 0), |row| (row[0], row[1]))
        };
        let taken = available >= quantity_of(line);
        let mut tx = self.shared.pool.begin().await?;
        if taken
            && self
                .take_units(&mut tx, line, purpose, Some(version))
                .await?
                == 0
        {
            tx.rollback().await?;
            return Ok(Try::Lost);
        }
        self.record(tx, line, purpose, taken, left(available, line, taken))
            .await
    }

    /// `UPDATE ... WHERE available >= n` first, then the record.
    async fn take_conditional(
        &self,
        line: OrderLine<'_>,
        purpose: Purpose,
    ) -> Result<Try, sqlx::Error> {
        let mut tx = self.shared.pool.begin().await?;
        let moved = self.take_units(&mut tx, line, purpose, None).await?;
        // After our update the row is ours until the commit; without one, a plain read.
        let level_read = &self.shared.statements.level_read;
        let level = D::fetch(&mut tx, level_read, &[Arg::Text(line.sku)]).await?;
        let available = first_number(&level);
        self.record(tx, line, purpose, moved == 1, available).await
    }

    /// Takes the line's units for `purpose` when available (and, with `version`, only while
    /// the row is at that version): the rows changed, 0 or 1.
    async fn take_units(
        &self,
        conn: &mut D::Connection,
        line: OrderLine<'_>,
        purpose: Purpose,
        version: Option<i64>,
    ) -> Result<u64, sqlx::Error> {
        let st = &self.shared.statements;
        let quantity = Arg::Int(quantity_of(line));
        let sku = Arg::Text(line.sku);
        match (purpose, version) {
            (Purpose::Sell, None) => {
                D::execute(conn, &st.sell, &[quantity, quantity, sku, quantity]).await
            }
            (Purpose::Hold(_), None) => {
                D::execute(conn, &st.hold, &[quantity, quantity, sku, quantity]).await
            }
            (Purpose::Sell, Some(version)) => {
                let args = [quantity, quantity, sku, Arg::Int(version), quantity];
                D::execute(conn, &st.sell_at_version, &args).await
            }
            (Purpose::Hold(_), Some(version)) => {
                let args = [quantity, quantity, sku, Arg::Int(version), quantity];
                D::execute(conn, &st.hold_at_version, &args).await
            }
        }
    }

    /// Records the order's outcome in `tx` and commits: [`Try::Recorded`] (rolled back, so
    /// nothing taken stays taken) when the order's record already exists.
    async fn record(
        &self,
        mut tx: sqlx::Transaction<'static, D>,
        line: OrderLine<'_>,
        purpose: Purpose,
        taken: bool,
        value: i64,
    ) -> Result<Try, sqlx::Error> {
        if !taken {
            let sku = [Arg::Text(line.sku)];
            let due = D::fetch(&mut tx, &self.shared.statements.any_due, &sku).await?;
            if !due.is_empty() {
                tx.rollback().await?;
                return Ok(Try::ExpireFirst);
            }
        }
        let (state, ttl) = match (purpose, taken) {
            (Purpose::Hold(ttl), true) => {
                (LIVE, i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX))
            }
            _ => (NOTHING_HELD, 0),
        };
        let inserted = D::execute(
            &mut tx,
            &self.shared.statements.order_insert,
            &[
                Arg::Text(line.sku),
                Arg::Int(purpose.kind()),
                Arg::Text(line.order),
                Arg::Int(quantity_of(line)),
                Arg::Int(i64::from(taken)),
                Arg::Int(value),
                Arg::Int(state),
                Arg::Int(ttl),
            ],
        )
        .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                tx.rollback().await?;
                return Ok(Try::Recorded);
            }
            Err(error) => return Err(error),
        }
        tx.commit().await?;
        Ok(Try::Done(Took {
            taken,
            value: u64::try_from(value).unwrap_or_default(),
            duplicate: false,
        }))
    }

    /// The first outcome of an order recorded before; `None` when its record is gone (the
    /// sweep removed it past its retention since it was found).
    async fn recorded(&self, line: OrderLine<'_>, purpose: Purpose) -> Result<Option<Took>> {
        let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
        let order = order_key(line, purpose);
        let rows = D::fetch(&mut conn, &self.shared.statements.order_read, &order)
            .await
            .map_err(Self::error)?;
        let Some(&[quantity, outcome, value]) = rows.first().map(Vec::as_slice) else {
            return Ok(None);
        };
        let first = u64::try_from(quantity).unwrap_or_default();
        if first != line.quantity {
            return Err(order_reused(line.order, first, line.quantity));
        }
        Ok(Some(Took {
            taken: outcome == 1,
            value: u64::try_from(value).unwrap_or_default(),
            duplicate: true,
        }))
    }
}

/// The order's primary key in the orders table.
fn order_key<'a>(line: OrderLine<'a>, purpose: Purpose) -> [Arg<'a>; 3] {
    [
        Arg::Text(line.sku),
        Arg::Int(purpose.kind()),
        Arg::Text(line.order),
    ]
}

/// The units left after an order that took its units (`taken`) or not, from `available`.
fn left(available: i64, line: OrderLine<'_>, taken: bool) -> i64 {
    if taken {
        available - quantity_of(line)
    } else {
        available
    }
}

/// The line's quantity as bound (at most [`MAX_QUANTITY`](crate::stock::MAX_QUANTITY)).
fn quantity_of(line: OrderLine<'_>) -> i64 {
    i64::try_from(line.quantity).unwrap_or(i64::MAX)
}

impl<D: Dialect> StockStore for SqlStock<D> {
    async fn restock(&self, line: OrderLine<'_>) -> Result<Restock> {
        self.add(line).await
    }

    async fn deduct(&self, line: OrderLine<'_>) -> Result<Deduction> {
        let took = self.take(line, Purpose::Sell).await?;
        let outcome = if took.taken {
            DeductOutcome::Deducted {
                remaining: took.value,
            }
        } else {
            DeductOutcome::OutOfStock {
                available: took.value,
            }
        };
        Ok(Deduction {
            outcome,
            duplicate: took.duplicate,
        })
    }

    async fn reserve(&self, line: OrderLine<'_>, ttl: Duration) -> Result<Reservation> {
        let took = self.take(line, Purpose::Hold(ttl)).await?;
        let outcome = if took.taken {
            ReserveOutcome::Reserved {
                remaining: took.value,
            }
        } else {
            ReserveOutcome::OutOfStock {
                available: took.value,
            }
        };
        Ok(Reservation {
            outcome,
            duplicate: took.duplicate,
        })
    }

    async fn confirm(&self, sku: &str, order: &str) -> Result<ConfirmOutcome> {
        Ok(match self.settle(sku, order, Settle::Confirm).await? {
            Found::Live => ConfirmOutcome::Confirmed,
            Found::Confirmed => ConfirmOutcome::AlreadyConfirmed,
            Found::Cancelled => ConfirmOutcome::Cancelled,
            Found::RanOut | Found::Expired => ConfirmOutcome::Expired,
            Found::Nothing => ConfirmOutcome::Unknown,
        })
    }

    async fn cancel(&self, sku: &str, order: &str) -> Result<CancelOutcome> {
        Ok(match self.settle(sku, order, Settle::Cancel).await? {
            Found::Live => CancelOutcome::Cancelled,
            Found::RanOut | Found::Expired | Found::Cancelled => CancelOutcome::AlreadyReleased,
            Found::Confirmed => CancelOutcome::AlreadyConfirmed,
            Found::Nothing => CancelOutcome::Unknown,
        })
    }

    async fn level(&self, sku: &str) -> Result<StockLevel> {
        self.read_level(sku).await
    }
}
