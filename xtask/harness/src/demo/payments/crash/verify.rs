//! The verdict on one payment after a crash: what the ledger holds for its key, against the
//! answers the client got (from the killed process, if any, and from the retry).

use std::fmt;

use example_support::payments::{Ledger, Receipt};

use super::super::client::Posted;

/// One key after its retry was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyVerdict {
    /// Ledger rows of the key (1 is right).
    pub rows: usize,
    /// The payer's balance is minus one payment.
    pub one_debit: bool,
    /// The retry was answered 201 (the payment was made, once).
    pub paid: bool,
    /// The retry's 201 was a replay: the killed process had committed the payment.
    pub replayed: bool,
    /// The killed process answered 201 before it died.
    pub answered_before_kill: bool,
    /// Every 201 of the key names the ledger's one row.
    pub receipts_agree: bool,
}

impl KeyVerdict {
    /// Reads the ledger for `key` of `scope`, paid by `payer` with `cents`, and compares it with
    /// the answers: `first` from the killed process (status 0 when it died first), `retry`
    /// from the survivor.
    pub async fn of(
        ledger: &Ledger,
        (scope, key): (&str, &str),
        (payer, cents): (&str, u64),
        first: &Posted,
        retry: &Posted,
    ) -> Result<Self, String> {
        let rows = ledger
            .effects_of(scope, key)
            .await
            .map_err(|e| e.to_string())?;
        let balance = ledger.balance(payer).await.map_err(|e| e.to_string())?;
        let receipt = |posted: &Posted| -> Option<Receipt> {
            (posted.status == 201)
                .then(|| serde_json::from_str(&posted.body).ok())
                .flatten()
        };
        let receipts: Vec<Receipt> = [first, retry].into_iter().filter_map(receipt).collect();
        let receipts_agree = match rows.as_slice() {
            [row] => receipts.iter().all(|r| r.payment_id == row.id),
            _ => receipts.is_empty(),
        };
        Ok(Self {
            rows: rows.len(),
            one_debit: i64::try_from(cents).is_ok_and(|cents| balance == -cents),
            paid: retry.status == 201,
            replayed: retry.status == 201 && retry.replayed,
            answered_before_kill: first.status == 201,
            receipts_agree,
        })
    }

    /// Whether this key was paid exactly once, and answered with that payment.
    #[must_use]
    pub fn is_right(&self) -> bool {
        self.rows == 1 && self.one_debit && self.paid && self.receipts_agree
    }
}

/// A run's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Payments attempted (keys).
    pub attempts: usize,
    /// Keys whose retry replayed the killed process's committed payment.
    pub effect_before_kill: usize,
    /// Keys the retry paid (the killed process had not committed).
    pub ran_on_retry: usize,
    /// Keys the killed process answered before it died.
    pub answered_before_kill: usize,
    /// Keys paid more than once (ledger rows or debits).
    pub paid_twice: usize,
    /// Keys not paid at all after the retry, or answered with another payment's receipt.
    pub wrong: usize,
}

impl Tally {
    /// Counts one key.
    pub fn add(&mut self, verdict: &KeyVerdict) {
        self.attempts += 1;
        if verdict.replayed {
            self.effect_before_kill += 1;
        } else if verdict.paid {
            self.ran_on_retry += 1;
        }
        if verdict.answered_before_kill {
            self.answered_before_kill += 1;
        }
        if verdict.rows > 1 || (verdict.rows == 1 && !verdict.one_debit) {
            self.paid_twice += 1;
        } else if !verdict.is_right() {
            self.wrong += 1;
        }
    }

    /// Adds another run's counts.
    pub fn merge(&mut self, other: &Tally) {
        self.attempts += other.attempts;
        self.effect_before_kill += other.effect_before_kill;
        self.ran_on_retry += other.ran_on_retry;
        self.answered_before_kill += other.answered_before_kill;
        self.paid_twice += other.paid_twice;
        self.wrong += other.wrong;
    }

    /// No payment made twice, none lost or misanswered.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.attempts > 0 && self.paid_twice == 0 && self.wrong == 0
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} attempts: {} committed before the kill (replayed), {} paid by the retry, {} answered before the kill; {} paid twice, {} lost or misanswered",
            self.attempts,
            self.effect_before_kill,
            self.ran_on_retry,
            self.answered_before_kill,
            self.paid_twice,
            self.wrong
        )
    }
}
