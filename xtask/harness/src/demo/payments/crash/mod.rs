//! Payments killed at their end: what `cargo xtask demo crash` and the payments apps' crash
//! tests run, on both store configurations (records on Redis with recovery points in the
//! ledger's PostgreSQL; records in PostgreSQL beside the ledger).
//!
//! - [`sweep`]: a kill -9 sweep across the handler's end. Each round starts an app process,
//!   sends it a staggered burst of payments (one key each, a fixed spacing apart) and kills it
//!   at one instant, so the payments are caught at every phase: before their effect, while it
//!   commits, between the commit and the record, and after the answer. Each key is then
//!   retried on a surviving process (of the other framework) until it is answered.
//! - [`proxied`]: the deterministic case: the process's route to its records is stalled by a
//!   fault proxy once its handler runs, its payment commits (it says so on stdout), and then it
//!   is killed. The record can only be in flight; the retry must replay the committed receipt.
//!
//! Every key is then checked against the ledger ([`verify`]): one row and one debit, and
//! every 201 the key got is the same receipt.

pub mod proxied;
pub mod sweep;
mod verify;

use std::time::Duration;

use example_support::payments::Ledger;

use super::checks::AppCommand;

pub use self::verify::{KeyVerdict, Tally};

/// Which store configuration the apps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Records {
    /// Records and claims on Redis; the ledger and its recovery points in PostgreSQL.
    Redis,
    /// Records, claims and ledger in one PostgreSQL database.
    Postgres,
}

impl Records {
    /// `redis` or `postgres` (the apps' `--backend`).
    #[must_use]
    pub fn backend(self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Postgres => "postgres",
        }
    }

    /// How the configuration makes a payment exactly once.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Redis => "records on Redis, recovery points in PostgreSQL",
            Self::Postgres => "records in PostgreSQL beside the ledger",
        }
    }
}

/// What a crash run needs: the app binary (both frameworks), the servers, the timings.
#[derive(Clone, Debug)]
pub struct CrashSetup {
    /// The axum app and the actix-web app (a killed process and its survivor alternate).
    pub apps: [AppCommand; 2],
    /// The store configuration.
    pub records: Records,
    /// Redis, for [`Records::Redis`].
    pub redis_url: String,
    /// PostgreSQL (the ledger, and for [`Records::Postgres`] the records too).
    pub postgres_url: String,
    /// The apps' namespace; the ledger's rows are under it.
    pub namespace: String,
    /// The claims' lease: a killed process's claims end this long after its last renewal.
    pub lease: Duration,
    /// How long the victim's handler works before it pays.
    pub handler: Duration,
    /// `--unsafe-separate-commit` on every app: the payment commits without its answer.
    pub unsafe_separate_commit: bool,
}

impl CrashSetup {
    /// The arguments every process of the run gets: backend, servers, namespace, lease.
    #[must_use]
    pub fn shared_args(&self, redis_url: &str, postgres_url: &str) -> Vec<String> {
        let mut args: Vec<String> = [
            "--backend",
            self.records.backend(),
            "--postgres-url",
            postgres_url,
            "--namespace",
            &self.namespace,
            "--lease-ms",
            &self.lease.as_millis().to_string(),
        ]
        .map(String::from)
        .to_vec();
        if self.records == Records::Redis {
            args.extend(["--redis-url".into(), redis_url.into()]);
        }
        if self.unsafe_separate_commit {
            args.push("--unsafe-separate-commit".into());
        }
        args
    }

    /// The ledger the apps record in, read directly.
    pub async fn ledger(&self) -> Result<Ledger, String> {
        Ledger::connect(&self.postgres_url, &self.namespace)
            .await
            .map_err(|e| format!("the ledger at {}: {e}", self.postgres_url))
    }
}
