//! Where a payment's effect goes: one row per payment made, and the two accounts' balances
//! moved, in process memory or in PostgreSQL (`payments_ledger` and `payments_accounts`).
//!
//! There is deliberately **no unique constraint** on the idempotency key: if a payment ran
//! twice, the ledger shows two rows and the account two debits. That the demo and the tests
//! find one row per key is the idempotency layer's doing, not the ledger's.
//!
//! **Exactly once across crashes** (PostgreSQL): the payment's transaction also writes the
//! request's answer, with lock-core's
//! [`ClaimInfo::commit_in`](lock_core::idempotency::ClaimInfo::commit_in): the idempotency
//! record itself when the records are in PostgreSQL, a recovery point when they are on Redis.
//! A process killed after the commit has its answer replayed to the retry; one killed before
//! it made no payment. A second execution that overlaps the first (a holder paused past its
//! lease) is told to roll back, and answers with the first one's receipt.
//!
//! What the ledger also checks is the claim's fencing token: a row is refused when a row of
//! the same key with a *newer* fence exists, so a handler whose claim was taken over cannot
//! add its stale effect after the newer one. That refuses a late straggler; on its own it
//! never stops a second execution (the retry's token is the newer one).

mod memory;
#[cfg(feature = "postgres")]
mod postgres;

use std::sync::{Arc, Mutex};

use lock_core::idempotency::ClaimInfo;

use super::answer::Receipt;
use super::input::Payment;

/// The ledger table's name.
pub const LEDGER_TABLE: &str = "payments_ledger";

/// The balances table's name.
pub const ACCOUNTS_TABLE: &str = "payments_accounts";

/// One payment made: a ledger row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// The row's id (the payment id in the receipt).
    pub id: u64,
    /// The principal the idempotency key belongs to.
    pub scope: String,
    /// The idempotency key.
    pub key: String,
    /// The fencing token of the claim that made it.
    pub fence: u64,
    /// The account the money left.
    pub from: String,
    /// The account the money went to.
    pub to: String,
    /// How much, in cents.
    pub cents: u64,
    /// When it was recorded, in ms since the Unix epoch.
    pub created_at_ms: u64,
}

impl Effect {
    /// The row `id` of `payment`, made under `claim` and recorded at `created_at_ms`.
    fn new(id: u64, claim: &ClaimInfo, payment: &Payment, created_at_ms: u64) -> Self {
        Self {
            id,
            scope: claim.scope.clone(),
            key: claim.key.clone(),
            fence: claim.fencing_token.get(),
            from: payment.from.clone(),
            to: payment.to.clone(),
            cents: payment.cents,
            created_at_ms,
        }
    }

    /// The receipt a 201 answers with.
    #[must_use]
    pub fn receipt(&self) -> Receipt {
        Receipt {
            payment_id: self.id,
            from: self.from.clone(),
            to: self.to.clone(),
            cents: self.cents,
            fence: self.fence,
        }
    }
}

/// What recording a payment came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// This execution made the payment (and, in PostgreSQL, wrote its answer with it).
    Made(Effect),
    /// An earlier execution of the same request made it and committed this receipt with it:
    /// answer with it; nothing was done again.
    Earlier(Receipt),
}

/// Why a payment was not recorded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// A newer claim on the same key already recorded its payment.
    #[error("a newer claim (fence {newer}) already recorded this key's payment")]
    Superseded {
        /// That claim's fencing token.
        newer: u64,
    },
    /// A newer claim on the key is running (it took this one's key over); it makes the
    /// payment, this execution rolled back.
    #[error("a newer claim on this key is making the payment")]
    InProgress,
    /// The key was used by another request, which made its payment; nothing was done.
    #[error("this idempotency key was used by another request")]
    KeyReused,
    /// The database failed; nothing was recorded.
    #[error("the ledger is unavailable: {0}")]
    Unavailable(String),
    /// The claim cannot write its answer in the payment's transaction (the app is wired with
    /// records that cannot commit with the ledger); nothing was recorded.
    #[error("the payment's answer cannot be committed with it: {0}")]
    Unwired(String),
}

/// The payments of one namespace. Cheap to clone; clones share the rows (memory) or the
/// connection pool (PostgreSQL).
#[derive(Clone, Debug)]
pub struct Ledger {
    namespace: String,
    kind: Kind,
    /// Whether a PostgreSQL payment commits its answer with it (always, but to show what
    /// goes wrong without: [`unsafe_separate_commit`](Ledger::unsafe_separate_commit)).
    answer_with_payment: bool,
}

#[derive(Clone, Debug)]
enum Kind {
    Memory(Arc<Mutex<memory::Books>>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Ledger {
    /// A ledger in this process's memory; clones (instances of this process) share it. The
    /// idempotency records are then in this process too, and the layer completes them after
    /// the handler (a crash takes records and ledger with it).
    ///
    /// ```
    /// use lock_core::idempotency::ClaimInfo;
    /// use lock_core::FencingToken;
    /// use example_support::payments::{Ledger, Payment, Recorded};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let ledger = Ledger::memory("docs");
    /// let payment = Payment::parse(br#"{"from":"a","to":"b","cents":7}"#).unwrap();
    /// let claim = ClaimInfo::new("alice", "k1", FencingToken::new(3));
    /// assert!(matches!(ledger.record(&claim, &payment).await, Ok(Recorded::Made(_))));
    /// let stale = ClaimInfo::new("alice", "k1", FencingToken::new(2));
    /// assert!(ledger.record(&stale, &payment).await.is_err());
    /// assert_eq!(ledger.effects().await.unwrap().len(), 1);
    /// assert_eq!((ledger.balance("a").await.unwrap(), ledger.balance("b").await.unwrap()), (-7, 7));
    /// # }
    /// ```
    #[must_use]
    pub fn memory(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            kind: Kind::Memory(Arc::default()),
            answer_with_payment: true,
        }
    }

    /// A ledger in the `payments_ledger` and `payments_accounts` tables of `pool`'s database
    /// (created if missing).
    #[cfg(feature = "postgres")]
    pub async fn postgres(pool: sqlx::PgPool, namespace: &str) -> Result<Self, LedgerError> {
        postgres::create_tables(&pool).await?;
        Ok(Self {
            namespace: namespace.to_owned(),
            kind: Kind::Postgres(pool),
            answer_with_payment: true,
        })
    }

    /// Connects to the PostgreSQL at `url` and uses its ledger tables.
    #[cfg(feature = "postgres")]
    pub async fn connect(url: &str, namespace: &str) -> Result<Self, LedgerError> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(postgres::unavailable)?;
        Self::postgres(pool, namespace).await
    }

    /// The same ledger, committing payments *without* their answer (the idempotency layer
    /// records it after the handler): a process killed between the two pays twice. For the
    /// crash checks' `--unsafe-separate-commit`, to show they can fail; never in an app.
    #[must_use]
    pub fn unsafe_separate_commit(mut self) -> Self {
        self.answer_with_payment = false;
        self
    }

    /// The pool of a PostgreSQL ledger (recovery points go in its database).
    #[cfg(feature = "postgres")]
    #[must_use]
    pub fn pool(&self) -> Option<&sqlx::PgPool> {
        match &self.kind {
            Kind::Postgres(pool) => Some(pool),
            Kind::Memory(_) => None,
        }
    }

    /// `memory` or `postgres`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Memory(_) => "memory",
            #[cfg(feature = "postgres")]
            Kind::Postgres(_) => "postgres",
        }
    }

    /// The namespace whose payments this ledger records and reads.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Records `payment`, made under `claim`: a ledger row and the two balances moved, and in
    /// PostgreSQL the request's answer (the receipt) in the same transaction. Refused when a
    /// newer claim on the same key recorded one ([`LedgerError::Superseded`]) or owns the
    /// key; [`Recorded::Earlier`] when an earlier execution of the request committed it.
    pub async fn record(
        &self,
        claim: &ClaimInfo,
        payment: &Payment,
    ) -> Result<Recorded, LedgerError> {
        match &self.kind {
            Kind::Memory(books) => memory::record(books, claim, payment),
            #[cfg(feature = "postgres")]
            Kind::Postgres(pool) => {
                let answer = self.answer_with_payment;
                postgres::record(pool, &self.namespace, claim, payment, answer).await
            }
        }
    }

    /// Every payment of the namespace, oldest first.
    pub async fn effects(&self) -> Result<Vec<Effect>, LedgerError> {
        match &self.kind {
            Kind::Memory(books) => Ok(memory::effects(books)),
            #[cfg(feature = "postgres")]
            Kind::Postgres(pool) => postgres::effects(pool, &self.namespace).await,
        }
    }

    /// The payments of one key of one principal.
    pub async fn effects_of(&self, scope: &str, key: &str) -> Result<Vec<Effect>, LedgerError> {
        let mut effects = self.effects().await?;
        effects.retain(|effect| effect.scope == scope && effect.key == key);
        Ok(effects)
    }

    /// The balance of `account` in cents: what it received minus what it paid (0 for an
    /// account that never moved money).
    pub async fn balance(&self, account: &str) -> Result<i64, LedgerError> {
        match &self.kind {
            Kind::Memory(books) => Ok(memory::balance(books, account)),
            #[cfg(feature = "postgres")]
            Kind::Postgres(pool) => postgres::balance(pool, &self.namespace, account).await,
        }
    }
}
