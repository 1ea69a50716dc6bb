//! The payments apps' settings (`payments-axum --help`): where the idempotency records, the
//! claims and the ledger live, and how the handler behaves.

use std::time::Duration;

use lock_core::lease::{MAX_LEASE_TTL, MIN_LEASE_TTL};

use lock_core::http::admin::TokenAuth;

use crate::backend::{postgres_url, redis_url, BackendKind};
use crate::flags::{Flags, ADMIN_TOKEN_FLAG};

/// Everything a standalone app instance is started with.
#[derive(Clone, Debug)]
pub struct PaymentsConfig {
    /// `--port` (0: any free port; the app prints the one it got).
    pub port: u16,
    /// `--backend memory|redis|postgres`: memory keeps records, claims and ledger in the
    /// process; redis keeps records and claims in Redis and the ledger in PostgreSQL; postgres
    /// keeps all three in PostgreSQL.
    pub backend: BackendKind,
    /// `--redis-url` (else `LOCK_TEST_REDIS_URL`, else the stack's default).
    pub redis_url: String,
    /// `--postgres-url` (else `LOCK_TEST_POSTGRES_URL`, else the stack's default).
    pub postgres_url: String,
    /// `--ledger-url`: with `--backend postgres`, another route to the same database for the
    /// ledger (a test puts a fault proxy on the records' route only); default: the records'
    /// connections.
    pub ledger_url: Option<String>,
    /// `--namespace`: instances share idempotency records and ledger rows only under the same
    /// one.
    pub namespace: String,
    /// `--name`: this instance's name in `/stats`.
    pub name: String,
    /// `--handler-ms`: how long the handler works before it records the payment.
    pub handler_delay: Duration,
    /// `--lease-ms`: the claim's lease, renewed by the watchdog while the handler runs; a
    /// killed process's claim ends this long after its last renewal.
    pub lease: Duration,
    /// `--unsafe-separate-commit`: the payment commits without its answer, which the layer
    /// records after the handler (as before `ClaimInfo::commit_in`): a process killed
    /// between the two pays twice. Only to show that the crash checks can fail.
    pub unsafe_separate_commit: bool,
    /// `--announce`: print `handling <user> <key> fence <n>` on stdout when a handler starts,
    /// and `paid <user> <key> payment <id>` once its payment committed
    /// (for tests that must act while it runs).
    pub announce: bool,
    /// `--admin-token` (else `ADMIN_TOKEN`): the admin console at `/admin` behind that token,
    /// on the idempotency claims' leases ([`crate::admin`]); none without.
    pub admin: Option<TokenAuth>,
}

/// The app's flags.
pub const APP_FLAGS: &[&str] = &[
    "port",
    "backend",
    "redis-url",
    "postgres-url",
    "ledger-url",
    "namespace",
    "name",
    "handler-ms",
    "lease-ms",
    "announce",
    "unsafe-separate-commit",
    ADMIN_TOKEN_FLAG,
];

/// The handler's default work time.
pub const DEFAULT_HANDLER_DELAY: Duration = Duration::from_millis(50);

impl PaymentsConfig {
    /// Parses the app's arguments (after the program name).
    ///
    /// ```
    /// use example_support::payments::PaymentsConfig;
    ///
    /// let args = ["--handler-ms", "5", "--lease-ms", "500"].map(String::from);
    /// let config = PaymentsConfig::from_args(args).unwrap();
    /// assert_eq!(config.handler_delay.as_millis(), 5);
    /// assert!(PaymentsConfig::from_args(["--backend".into(), "etcd".into()]).is_err());
    /// ```
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let flags = Flags::parse(args, APP_FLAGS)?;
        Self::from_flags(&flags)
    }

    /// The settings of `flags` (which may hold more flags than the app's).
    pub fn from_flags(flags: &Flags) -> Result<Self, String> {
        let port = flags.number("port", 8080)?;
        let backend = flags.backend()?;
        if !matches!(
            backend,
            BackendKind::Memory | BackendKind::Redis | BackendKind::Postgres
        ) {
            return Err(format!(
                "the payments apps run on memory, redis or postgres, not {}",
                backend.name()
            ));
        }
        let lease = Duration::from_millis(flags.number("lease-ms", 30_000)?);
        if !(MIN_LEASE_TTL..=MAX_LEASE_TTL).contains(&lease) {
            return Err(format!(
                "--lease-ms must be within {} ms and {} ms",
                MIN_LEASE_TTL.as_millis(),
                MAX_LEASE_TTL.as_millis()
            ));
        }
        Ok(Self {
            port: u16::try_from(port).map_err(|_| format!("--port {port} is not a port"))?,
            backend,
            redis_url: redis_url(flags),
            postgres_url: flags
                .get("postgres-url")
                .map_or_else(postgres_url, str::to_owned),
            ledger_url: flags.get("ledger-url").map(str::to_owned),
            namespace: flags.get("namespace").unwrap_or("payments").to_owned(),
            name: flags.get("name").unwrap_or("payments").to_owned(),
            handler_delay: Duration::from_millis(
                flags.number("handler-ms", DEFAULT_HANDLER_DELAY.as_millis() as u64)?,
            ),
            lease,
            announce: switch(flags, "announce")?,
            unsafe_separate_commit: switch(flags, "unsafe-separate-commit")?,
            admin: flags.admin_auth()?,
        })
    }

    /// The defaults on memory (for in-process tests).
    #[must_use]
    pub fn memory() -> Self {
        Self::from_args(Vec::new()).expect("the defaults parse")
    }
}

/// A flag that takes no value.
fn switch(flags: &Flags, name: &str) -> Result<bool, String> {
    match flags.get(name) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(format!("--{name} takes no value, got {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<PaymentsConfig, String> {
        PaymentsConfig::from_args(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn flags_set_the_config_and_bad_ones_are_refused() {
        let config = parse(&[
            "--backend",
            "postgres",
            "--postgres-url",
            "postgres://x@h/db",
            "--announce",
            "--lease-ms",
            "200",
        ])
        .unwrap();
        assert_eq!(config.backend, BackendKind::Postgres);
        assert_eq!(config.postgres_url, "postgres://x@h/db");
        assert!(config.announce);
        assert_eq!(config.lease, Duration::from_millis(200));
        assert!(!PaymentsConfig::memory().announce);
        assert!(parse(&["--lease-ms", "5"]).is_err());
        assert!(parse(&["--backend", "mysql"]).is_err());
        assert!(parse(&["--handler-ms", "-1"]).is_err());
        assert!(parse(&["--port", "70000"]).is_err());
        assert!(parse(&["--sku", "x"]).is_err());
    }
}
