//! The ledger in this process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use lock_core::idempotency::ClaimInfo;

use super::{Effect, LedgerError, Recorded};
use crate::payments::input::Payment;

/// The rows and the balances.
#[derive(Debug, Default)]
pub(super) struct Books {
    rows: Vec<Effect>,
    balances: HashMap<String, i64>,
}

pub(super) fn record(
    books: &Mutex<Books>,
    claim: &ClaimInfo,
    payment: &Payment,
) -> Result<Recorded, LedgerError> {
    let mut books = books.lock().unwrap_or_else(PoisonError::into_inner);
    let newest = books
        .rows
        .iter()
        .filter(|row| row.scope == claim.scope && row.key == claim.key)
        .map(|row| row.fence)
        .max();
    if let Some(newer) = newest.filter(|newer| *newer > claim.fencing_token.get()) {
        return Err(LedgerError::Superseded { newer });
    }
    let cents = i64::try_from(payment.cents)
        .map_err(|_| LedgerError::Unavailable("amount out of range".into()))?;
    let effect = Effect::new(books.rows.len() as u64 + 1, claim, payment, now_ms());
    *books.balances.entry(payment.from.clone()).or_default() -= cents;
    *books.balances.entry(payment.to.clone()).or_default() += cents;
    books.rows.push(effect.clone());
    Ok(Recorded::Made(effect))
}

pub(super) fn effects(books: &Mutex<Books>) -> Vec<Effect> {
    books
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .rows
        .clone()
}

pub(super) fn balance(books: &Mutex<Books>, account: &str) -> i64 {
    let books = books.lock().unwrap_or_else(PoisonError::into_inner);
    books.balances.get(account).copied().unwrap_or(0)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
