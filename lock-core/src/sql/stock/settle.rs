//! Restocking, confirming and cancelling reservations, returning expired ones, reading a
//! SKU's level, the sweep of the records past their retention, the schema, and running a
//! transaction again when the database aborted it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::dialect::{first_number, Arg};
use super::statements::{CANCELLED, CONFIRMED, EXPIRED, LIVE, NOTHING_HELD, RESTOCK};
use super::{SqlStock, SWEEP_EVERY_CALLS, SWEEP_INTERVAL_MAX};
use crate::sql::Dialect;
use crate::stock::{restock_reused, OrderLine, Restock, StockLevel, UNKNOWN_SKU_RETENTION};
use crate::{LockError, Result};

/// What a confirm or cancel does to a live reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Settle {
    /// Sell its units.
    Confirm,
    /// Return its units to stock.
    Cancel,
}

/// The reservation a confirm or cancel found (and, when live, settled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Live: settled now.
    Live,
    /// Live but past `expires_at`: its units went back now.
    RanOut,
    /// Confirmed before.
    Confirmed,
    /// Cancelled before.
    Cancelled,
    /// Expired before.
    Expired,
    /// No reservation held units for this order id.
    Nothing,
}

impl<D: Dialect> SqlStock<D> {
    /// Adds the line's units to its SKU (creating its row) and records the restock id in the
    /// same transaction, once: a restock id recorded before adds nothing and answers the level
    /// now.
    pub(super) async fn add(&self, line: OrderLine<'_>) -> Result<Restock> {
        self.counted();
        let st = &self.shared.statements;
        let units = i64::try_from(line.quantity).unwrap_or(i64::MAX);
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let added = self
                .retried(|| async move {
                    let mut tx = self.shared.pool.begin().await?;
                    let args = [Arg::Text(line.sku), Arg::Int(units), Arg::Int(units)];
                    D::execute(&mut tx, &st.restock, &args).await?;
                    let record = [
                        Arg::Text(line.sku),
                        Arg::Int(RESTOCK),
                        Arg::Text(line.order),
                        Arg::Int(units),
                        Arg::Int(1),
                        Arg::Int(0),
                        Arg::Int(NOTHING_HELD),
                        Arg::Int(0),
                    ];
                    match D::execute(&mut tx, &st.order_insert, &record).await {
                        Ok(_) => {}
                        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                            tx.rollback().await?;
                            return Ok(None);
                        }
                        Err(error) => return Err(error),
                    }
                    let rows = D::fetch(&mut tx, &st.level_all, &[Arg::Text(line.sku)]).await?;
                    tx.commit().await?;
                    Ok(Some(level_of(&rows)))
                })
                .await?;
            if let Some(level) = added {
                return Ok(Restock {
                    level,
                    duplicate: false,
                });
            }
            let recorded = [
                Arg::Text(line.sku),
                Arg::Int(RESTOCK),
                Arg::Text(line.order),
            ];
            let rows = {
                let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
                D::fetch(&mut conn, &st.order_read, &recorded)
                    .await
                    .map_err(Self::error)?
            };
            match rows
                .first()
                .map(|row| u64::try_from(row[0]).unwrap_or_default())
            {
                Some(first) if first != line.quantity => {
                    return Err(restock_reused(line.order, first, line.quantity));
                }
                Some(_) => {
                    return Ok(Restock {
                        level: self.current_level(line.sku).await?,
                        duplicate: true,
                    });
                }
                // Swept since: past its retention, the restock is new.
                None if attempt < self.shared.attempts => {}
                None => {
                    return Err(LockError::Busy {
                        key: line.sku.to_owned(),
                        waited: started.elapsed(),
                    })
                }
            }
        }
    }

    /// Confirms or cancels `order`'s reservation of `sku`, under the SKU's row lock (taken
    /// first, as every transaction here takes it, so none waits for another in a circle).
    pub(super) async fn settle(&self, sku: &str, order: &str, action: Settle) -> Result<Found> {
        self.counted();
        let st = &self.shared.statements;
        self.retried(|| async move {
            let mut tx = self.shared.pool.begin().await?;
            D::fetch(&mut tx, &st.level_locked, &[Arg::Text(sku)]).await?;
            let rows = D::fetch(
                &mut tx,
                &st.reservation_locked,
                &[Arg::Text(sku), Arg::Text(order)],
            )
            .await?;
            let Some(&[quantity, state, ran_out]) = rows.first().map(Vec::as_slice) else {
                tx.rollback().await?;
                return Ok(Found::Nothing);
            };
            let found = match state {
                LIVE if ran_out == 1 => Found::RanOut,
                LIVE => Found::Live,
                CONFIRMED => Found::Confirmed,
                CANCELLED => Found::Cancelled,
                EXPIRED => Found::Expired,
                _ => Found::Nothing,
            };
            let (new_state, levels) = match (found, action) {
                (Found::Live, Settle::Confirm) => (CONFIRMED, &st.sell_held),
                (Found::Live, Settle::Cancel) => (CANCELLED, &st.unhold),
                (Found::RanOut, _) => (EXPIRED, &st.unhold),
                _ => {
                    tx.rollback().await?;
                    return Ok(found);
                }
            };
            let order_args = [Arg::Int(new_state), Arg::Text(sku), Arg::Text(order)];
            D::execute(&mut tx, &st.reservation_set, &order_args).await?;
            let level_args = [Arg::Int(quantity), Arg::Int(quantity), Arg::Text(sku)];
            D::execute(&mut tx, levels, &level_args).await?;
            tx.commit().await?;
            Ok(found)
        })
        .await
    }

    /// The SKU's level, expired reservations returned first.
    pub(super) async fn read_level(&self, sku: &str) -> Result<StockLevel> {
        self.counted();
        self.current_level(sku).await
    }

    /// [`read_level`](Self::read_level) without counting an operation.
    async fn current_level(&self, sku: &str) -> Result<StockLevel> {
        self.expire_due(sku).await?;
        let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
        let rows = D::fetch(
            &mut conn,
            &self.shared.statements.level_all,
            &[Arg::Text(sku)],
        )
        .await
        .map_err(Self::error)?;
        Ok(level_of(&rows))
    }

    /// Returns the units of the SKU's reservations that ran out (one cheap read when none
    /// did).
    pub(super) async fn expire_due(&self, sku: &str) -> Result<()> {
        let st = &self.shared.statements;
        {
            let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
            let due = D::fetch(&mut conn, &st.any_due, &[Arg::Text(sku)])
                .await
                .map_err(Self::error)?;
            if due.is_empty() {
                return Ok(());
            }
        }
        self.retried(|| async move {
            let mut tx = self.shared.pool.begin().await?;
            D::fetch(&mut tx, &st.level_locked, &[Arg::Text(sku)]).await?;
            // One moment for both statements: what the sum counted is what gets marked.
            let now = D::fetch(&mut tx, &st.now, &[]).await?;
            let cutoff = first_number(&now);
            let args = [Arg::Text(sku), Arg::Int(cutoff)];
            let units = D::fetch(&mut tx, &st.due_units, &args).await?;
            let units = first_number(&units);
            if units > 0 {
                D::execute(&mut tx, &st.due_expire, &args).await?;
                let back = [Arg::Int(units), Arg::Int(units), Arg::Text(sku)];
                D::execute(&mut tx, &st.unhold, &back).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Removes the rows past the retention: those final for longer than the store's
    /// retention, and those of SKUs never restocked written more than
    /// [`UNKNOWN_SKU_RETENTION`] ago (when that is shorter): the rows removed. The store runs
    /// it by itself in the background (every [`SWEEP_EVERY_CALLS`] operations, and at the
    /// first operation a sixteenth of the retention, an hour at most, after the last sweep).
    pub async fn sweep(&self) -> Result<u64> {
        let retention = self.shared.retention;
        let final_rows = self
            .sweep_batches(&self.shared.statements.sweep_final, retention, 2)
            .await?;
        let unknown = self
            .sweep_unknown_older_than(UNKNOWN_SKU_RETENTION.min(retention))
            .await?;
        Ok(final_rows + unknown)
    }

    /// Removes the records of SKUs never restocked written more than `retention` ago (for
    /// tests): the rows removed.
    #[doc(hidden)]
    pub async fn sweep_unknown_older_than(&self, retention: Duration) -> Result<u64> {
        self.sweep_batches(&self.shared.statements.sweep_unknown, retention, 1)
            .await
    }

    /// Runs `statement` (one batch of at most 1,000 deletions, `retention` bound `times`
    /// times) until a batch removes fewer: the rows removed.
    async fn sweep_batches(
        &self,
        statement: &str,
        retention: Duration,
        times: usize,
    ) -> Result<u64> {
        let retention = Arg::Int(i64::try_from(retention.as_micros()).unwrap_or(i64::MAX));
        let args = vec![retention; times];
        let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
        let mut removed = 0;
        loop {
            let batch = D::execute(&mut conn, statement, &args)
                .await
                .map_err(Self::error)?;
            removed += batch;
            if batch < 1000 {
                return Ok(removed);
            }
        }
    }

    /// Creates the tables when missing. Two stores creating them at once may collide on
    /// PostgreSQL's catalog: the loser tries again and finds them.
    pub async fn ensure_schema(&self) -> Result<()> {
        for statement in &self.shared.statements.schema {
            let mut attempt = 0;
            loop {
                attempt += 1;
                let mut conn = self.shared.pool.acquire().await.map_err(Self::error)?;
                match D::execute(&mut conn, statement, &[]).await {
                    Ok(_) => break,
                    Err(sqlx::Error::Database(_)) if attempt < 3 => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(error) => return Err(Self::error(error)),
                }
            }
        }
        Ok(())
    }

    /// Counts an operation; every [`SWEEP_EVERY_CALLS`]th, and the first a sixteenth of the
    /// retention (an hour at most) after the last sweep started, starts one in the background.
    pub(super) fn counted(&self) {
        let shared = &self.shared;
        let calls = shared.calls.fetch_add(1, Ordering::Relaxed);
        let now = u64::try_from(shared.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = shared.last_sweep_ms.load(Ordering::Relaxed);
        let interval = (shared.retention / 16).min(SWEEP_INTERVAL_MAX).as_millis();
        let due = (calls > 0 && calls.is_multiple_of(SWEEP_EVERY_CALLS))
            || u128::from(now.saturating_sub(last)) >= interval;
        if !due
            || shared
                .last_sweep_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let stock = self.clone();
            runtime.spawn(async move {
                if let Err(error) = stock.sweep().await {
                    tracing::debug!(%error, "sweeping the stock records past their retention failed");
                }
            });
        }
    }

    /// Runs `attempt` (one transaction) again while the database aborts it as a deadlock or
    /// serialization victim, up to the store's attempts.
    async fn retried<T, F, Fut>(&self, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) => self.on_failure(error, tries)?,
            }
        }
    }

    pub(super) fn count_retry(&self) {
        self.shared.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// After a failed try: `Ok` to run it again (the database aborted it as a deadlock or
    /// serialization victim, and tries are left), the error otherwise.
    pub(super) fn on_failure(&self, error: sqlx::Error, attempt: u32) -> Result<()> {
        if D::is_conflict(&error) && attempt < self.shared.attempts {
            self.shared.conflicts.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err(Self::error(error))
    }
}

/// A level row (`available, reserved, sold, received`), or zeros for a SKU never restocked.
fn level_of(rows: &[Vec<i64>]) -> StockLevel {
    let number = |i: usize| {
        rows.first()
            .and_then(|row| row.get(i))
            .and_then(|&n| u64::try_from(n).ok())
            .unwrap_or(0)
    };
    StockLevel {
        available: number(0),
        reserved: number(1),
        sold: number(2),
        received: number(3),
    }
}
