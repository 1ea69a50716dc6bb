//! Retention: rows of locks nobody has held for a day are deleted, so keys used once (or
//! named by anonymous requests) do not grow the tables without bound.
//!
//! Each backend runs one sweeper task, which deletes in batches every [`SWEEP_EVERY`]
//! (jittered, so instances spread out) and stops with the backend. Fencing tokens keep
//! increasing across a deleted row: PostgreSQL draws them from one sequence for all keys, and
//! MySQL re-seeds a deleted key's counter from the clock in microseconds, which is past every
//! token the old counter gave (each grant takes well over a microsecond).

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::dialect::Values;
use super::{micros, run, Dialect, Shared};
use crate::Result;

/// How long after a lock's lease ended (released, expired or abandoned) its rows are kept.
/// A day also covers any statement that could still be in flight for it, and clock steps on
/// the database server of less than that.
pub const ROW_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// How often a backend's sweeper runs (±20%).
pub const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// Rows deleted per statement, so a sweep never holds many row locks at once.
pub(crate) const SWEEP_BATCH: u64 = 1_000;

/// Batches per sweep at most; what is left waits for the next sweep.
const MAX_BATCHES: u32 = 100;

/// Runs `batch` (one bounded `DELETE`, returning the rows it deleted) until a batch comes back
/// short; returns the rows deleted.
pub(crate) async fn sweep<F, Fut>(mut batch: F) -> Result<u64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    let mut deleted = 0;
    for _ in 0..MAX_BATCHES {
        let rows = batch().await?;
        deleted += rows;
        if rows < SWEEP_BATCH {
            break;
        }
    }
    Ok(deleted)
}

/// One sweep of a lock backend's rows (and counters) unused for [`ROW_RETENTION`], statement by
/// statement, in batches.
pub(crate) async fn sweep_rows<D: Dialect>(shared: Arc<Shared<D>>) -> Result<u64> {
    let values = Values {
        retention: micros(ROW_RETENTION),
        ..Values::default()
    };
    let mut deleted = 0;
    for statement in &shared.sql.sweeps {
        deleted += sweep(|| {
            run(D::BACKEND, &shared.config, &shared.breaker, "sweep", || {
                D::rows(&shared.pool, statement, values)
            })
        })
        .await?;
    }
    Ok(deleted)
}

/// Spawns the task that runs `sweep` on the backend's shared state every [`SWEEP_EVERY`],
/// until `stop` or until the backend is gone (it holds the state weakly, so it never keeps a
/// dropped backend alive). `what` names the rows in its log lines.
pub(crate) fn spawn_sweeper<S, Fut>(
    backend: &'static str,
    what: &'static str,
    stop: CancellationToken,
    shared: Weak<S>,
    sweep: fn(Arc<S>) -> Fut,
) where
    S: Send + Sync + 'static,
    Fut: Future<Output = Result<u64>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(crate::jitter::jitter(SWEEP_EVERY)) => {}
            }
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match sweep(shared).await {
                Ok(0) => {}
                Ok(rows) => tracing::debug!(backend, rows, what, "swept old rows"),
                // The pool's breaker reports an outage once.
                Err(error) if error.is_unavailable() => {
                    tracing::debug!(backend, what, error = %error.with_causes(), "sweeping old rows failed; the next sweep tries again")
                }
                Err(error) => {
                    tracing::warn!(backend, what, error = %error.with_causes(), "sweeping old rows failed; the next sweep tries again")
                }
            }
        }
    });
}
