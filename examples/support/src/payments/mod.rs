//! The payments service behind both idempotency example apps (axum and actix-web): a payment
//! moves money between two accounts and must happen **once per idempotency key**, however
//! often a client retries, across every instance. The apps put lock-core's idempotency layer
//! (`lock-tower`'s `IdempotencyLayer`, `lock-actix`'s `Idempotency`) in front of
//! [`PaymentService::pay`]; this module is everything else, once for both frameworks.
//!
//! - `POST /payments` with `Authorization: Bearer <user>`, `Idempotency-Key: <key>` and a
//!   body `{"from":"acct-a","to":"acct-b","cents":100}`: the handler works for
//!   `--handler-ms`, then records the payment in the [`Ledger`] under its claim's fencing
//!   token ([`ClaimInfo`]) and answers 201 with a [`Receipt`]. Duplicates are the layer's: a
//!   replay of that 201 (`Idempotent-Replayed: true`), 409 while the first still runs, 422
//!   for the key reused with another body. No user: 401 before the layer ([`User`]); a bad
//!   body: 400 `application/problem+json` ([`Payment::parse`]).
//! - `GET /stats`: this instance's idempotency counters and handler executions.
//!
//! ```
//! use lock_core::idempotency::ClaimInfo;
//! use lock_core::FencingToken;
//! use example_support::payments::{PaymentService, PaymentsConfig, Receipt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut config = PaymentsConfig::memory();
//! config.handler_delay = std::time::Duration::ZERO;
//! let service = PaymentService::start(&config).await.unwrap();
//! let claim = ClaimInfo::new("alice", "key-1", FencingToken::new(1));
//! let answer = service.pay(Some(&claim), br#"{"from":"a","to":"b","cents":100}"#).await;
//! let receipt: Receipt = serde_json::from_slice(&answer.body).unwrap();
//! assert_eq!((answer.status, receipt.cents, receipt.fence), (201, 100, 1));
//! assert_eq!(service.ledger().effects().await.unwrap().len(), 1);
//! # }
//! ```

mod answer;
mod auth;
mod backend;
mod config;
mod input;
mod ledger;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::http::admin::AdminConsole;
use lock_core::idempotency::{ClaimInfo, Idempotency, IdempotencyStats};
use serde_json::json;

pub use self::answer::{
    PaymentAnswer, Receipt, IN_PROGRESS, KEY_REUSED, LEDGER_UNAVAILABLE, NO_CLAIM, SUPERSEDED,
    UNAUTHORIZED, UNWIRED,
};
pub use self::auth::{scope, User, MAX_USER_LEN};
pub use self::backend::PaymentsBackend;
pub use self::config::{PaymentsConfig, APP_FLAGS, DEFAULT_HANDLER_DELAY};
pub use self::input::{BadInput, Payment, BAD_INPUT, MAX_ACCOUNT_LEN, MAX_CENTS};
pub use self::ledger::{Effect, Ledger, LedgerError, Recorded, ACCOUNTS_TABLE, LEDGER_TABLE};

/// The payment route.
pub const PAYMENTS_PATH: &str = "/payments";

/// The statistics route.
pub const STATS_PATH: &str = "/stats";

/// One instance of the payments service: its idempotency client (the layer in front of the
/// handler uses it), its ledger and what its handler did. Cheap to clone; clones are the same
/// instance.
#[derive(Clone)]
pub struct PaymentService {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    backend: &'static str,
    idempotency: Idempotency,
    ledger: Ledger,
    handler_delay: Duration,
    announce: bool,
    /// Handler runs (every call of [`PaymentService::pay`]).
    executions: AtomicU64,
    /// Payments recorded by this instance.
    recorded: AtomicU64,
    /// The admin console on the idempotency claims, with `--admin-token`.
    admin: Option<AdminConsole>,
}

impl PaymentService {
    /// A standalone instance on the backend `config` names.
    pub async fn start(config: &PaymentsConfig) -> Result<Self, String> {
        let backend = PaymentsBackend::of_config(config);
        let mut service = Self::on(&backend, config).await?;
        if let Some(auth) = config.admin.clone() {
            let locks = backend.lock_client(&config.namespace).await?;
            if let Some(inner) = Arc::get_mut(&mut service.inner) {
                let console = crate::admin::builder(locks, auth)
                    .idempotency(&inner.idempotency)
                    .build();
                inner.admin = Some(console);
            }
        }
        Ok(service)
    }

    /// One more instance on `backend` (instances of one process on a shared backend, as the
    /// demo runs them): its own connections, `config`'s namespace, lease and handler.
    pub async fn on(backend: &PaymentsBackend, config: &PaymentsConfig) -> Result<Self, String> {
        let (idempotency, mut ledger) = backend.instance(&config.namespace, config.lease).await?;
        if config.unsafe_separate_commit {
            ledger = ledger.unsafe_separate_commit();
        }
        Ok(Self::new(
            &config.name,
            backend.name(),
            idempotency,
            ledger,
            config.handler_delay,
            config.announce,
        ))
    }

    /// An instance named `name` (for `/stats`) on `idempotency` and `ledger`.
    #[must_use]
    pub fn new(
        name: &str,
        backend: &'static str,
        idempotency: Idempotency,
        ledger: Ledger,
        handler_delay: Duration,
        announce: bool,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                backend,
                idempotency,
                ledger,
                handler_delay,
                announce,
                executions: AtomicU64::new(0),
                recorded: AtomicU64::new(0),
                admin: None,
            }),
        }
    }

    /// The admin console on the idempotency claims (the payments in flight), when started
    /// with `--admin-token`: the apps mount it at [`crate::admin::PATH`].
    #[must_use]
    pub fn admin(&self) -> Option<&AdminConsole> {
        self.inner.admin.as_ref()
    }

    /// The instance's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The idempotency client the layer in front of [`pay`](Self::pay) must use.
    #[must_use]
    pub fn idempotency(&self) -> &Idempotency {
        &self.inner.idempotency
    }

    /// Where this instance records payments.
    #[must_use]
    pub fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// How often the handler ran.
    #[must_use]
    pub fn executions(&self) -> u64 {
        self.inner.executions.load(Ordering::SeqCst)
    }

    /// The layer's counters.
    #[must_use]
    pub fn idempotency_stats(&self) -> IdempotencyStats {
        self.inner.idempotency.stats()
    }

    /// `POST /payments`, run by the idempotency layer once per key: checks the body, works
    /// for the handler delay, then records the payment under the claim's fence (the effect
    /// comes last: a handler killed while it works has moved nothing) and answers 201 with
    /// the receipt. 400 for a bad body, 409 when a newer claim already paid, 503 when the
    /// ledger is down (not kept by the layer: a retry runs again), 500 without a claim.
    pub async fn pay(&self, claim: Option<&ClaimInfo>, body: &[u8]) -> PaymentAnswer {
        self.inner.executions.fetch_add(1, Ordering::SeqCst);
        let Some(claim) = claim else {
            return PaymentAnswer::no_claim();
        };
        if self.inner.announce {
            // A line for tests that act while the handler runs (it has claimed by now).
            println!(
                "handling {} {} fence {}",
                claim.scope,
                claim.key,
                claim.fencing_token.get()
            );
        }
        let payment = match Payment::parse(body) {
            Ok(payment) => payment,
            Err(bad) => return PaymentAnswer::bad_input(BAD_INPUT, bad.input, &bad.detail),
        };
        tokio::time::sleep(self.inner.handler_delay).await;
        match self.inner.ledger.record(claim, &payment).await {
            Ok(Recorded::Made(effect)) => {
                self.inner.recorded.fetch_add(1, Ordering::SeqCst);
                if self.inner.announce {
                    // After the commit: the payment and its answer are in the database.
                    println!("paid {} {} payment {}", claim.scope, claim.key, effect.id);
                }
                PaymentAnswer::receipt(&effect.receipt())
            }
            // An earlier execution of this request paid and committed its receipt: that is
            // the answer (the same bytes a replay gets).
            Ok(Recorded::Earlier(receipt)) => PaymentAnswer::receipt(&receipt),
            Err(LedgerError::Superseded { newer }) => {
                PaymentAnswer::superseded(claim.fencing_token.get(), newer)
            }
            Err(LedgerError::InProgress) => PaymentAnswer::in_progress(),
            Err(LedgerError::KeyReused) => PaymentAnswer::key_reused(),
            Err(LedgerError::Unavailable(detail)) => PaymentAnswer::ledger_unavailable(&detail),
            Err(error @ LedgerError::Unwired(_)) => PaymentAnswer::unwired(&error.to_string()),
        }
    }

    /// `GET /stats`: this instance's handler runs and idempotency counters.
    #[must_use]
    pub fn stats(&self) -> PaymentAnswer {
        let s = self.idempotency_stats();
        PaymentAnswer::json(
            200,
            &json!({
                "instance": self.inner.name,
                "backend": self.inner.backend,
                "ledger": self.inner.ledger.name(),
                "handler": {
                    "executions": self.executions(),
                    "recorded": self.inner.recorded.load(Ordering::SeqCst),
                    "delay_ms": self.inner.handler_delay.as_millis() as u64,
                },
                "idempotency": {
                    "executed": s.executed,
                    "replayed": s.replayed,
                    "in_flight": s.in_flight,
                    "mismatched": s.mismatched,
                    "rejected": s.rejected,
                    "unavailable": s.unavailable,
                    "lost": s.lost,
                    "superseded": s.superseded,
                    "store_failed": s.store_failed,
                },
            }),
        )
    }
}

impl std::fmt::Debug for PaymentService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaymentService")
            .field("name", &self.inner.name)
            .field("backend", &self.inner.backend)
            .finish_non_exhaustive()
    }
}
