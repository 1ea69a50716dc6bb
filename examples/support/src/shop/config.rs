//! The example apps' command line.

use std::time::Duration;

use super::{check_sku, check_ttl};
use lock_core::http::admin::TokenAuth;

use crate::backend::{redis_url, BackendKind};
use crate::flags::{Flags, ADMIN_TOKEN_FLAG};

/// How the shop sells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Keyed-lock middleware, then read-check-write of a plain counter, fenced.
    Lock,
    /// One atomic, idempotent deduction (on PostgreSQL and MySQL: a conditional update).
    Atomic,
    /// Reserve a unit, then confirm the reservation.
    Reserve,
    /// PostgreSQL and MySQL: `SELECT ... FOR UPDATE` on the SKU's row, then the deduction.
    ForUpdate,
    /// PostgreSQL and MySQL: compare-and-set on the row's version, retried.
    Optimistic,
    /// PostgreSQL and MySQL: `UPDATE ... WHERE available >= 1`, no read first.
    Conditional,
}

impl Strategy {
    /// Every strategy on memory and Redis, in the order the demo runs them.
    pub const ALL: [Self; 3] = [Self::Lock, Self::Atomic, Self::Reserve];

    /// Every strategy on PostgreSQL and MySQL, in the order the demo runs them (`atomic` is
    /// `conditional` there, so it is left out).
    pub const SQL: [Self; 5] = [
        Self::ForUpdate,
        Self::Optimistic,
        Self::Conditional,
        Self::Lock,
        Self::Reserve,
    ];

    /// Every strategy the shop runs on `backend` (`--strategy all`).
    #[must_use]
    pub fn all_on(backend: BackendKind) -> &'static [Self] {
        match backend {
            BackendKind::Postgres | BackendKind::Mysql => &Self::SQL,
            _ => &Self::ALL,
        }
    }

    /// Parses `lock`, `atomic`, `reserve`, `for-update`, `optimistic` or `conditional`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "lock" => Ok(Self::Lock),
            "atomic" => Ok(Self::Atomic),
            "reserve" => Ok(Self::Reserve),
            "for-update" => Ok(Self::ForUpdate),
            "optimistic" => Ok(Self::Optimistic),
            "conditional" => Ok(Self::Conditional),
            other => Err(format!(
                "unknown strategy {other:?}; expected lock, atomic, reserve, for-update, \
                 optimistic or conditional"
            )),
        }
    }

    /// The strategy's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Lock => "lock",
            Self::Atomic => "atomic",
            Self::Reserve => "reserve",
            Self::ForUpdate => "for-update",
            Self::Optimistic => "optimistic",
            Self::Conditional => "conditional",
        }
    }

    /// True for the strategies only the SQL stores have.
    #[must_use]
    pub fn is_sql_only(self) -> bool {
        matches!(self, Self::ForUpdate | Self::Optimistic | Self::Conditional)
    }

    /// True for the strategies that sell through the stock primitive (all but `lock`).
    #[must_use]
    pub fn uses_stock(self) -> bool {
        self != Self::Lock
    }
}

/// Everything an app instance is started with.
#[derive(Clone, Debug)]
pub struct ShopConfig {
    /// `--port` (0: any free port; the app prints the one it got).
    pub port: u16,
    /// `--strategy`.
    pub strategy: Strategy,
    /// `--backend`.
    pub backend: BackendKind,
    /// `--redis-url` (else `LOCK_TEST_REDIS_URL`, else the stack's default).
    pub redis_url: String,
    /// `--namespace`: keeps runs sharing a Redis apart.
    pub namespace: String,
    /// `--sku`: the SKU `--stock` seeds (the rules of [`check_sku`]).
    pub sku: String,
    /// `--stock N`: add N units to `--sku` on start.
    pub seed: Option<u64>,
    /// `--wait-ms`: how long the lock strategy waits for a busy SKU.
    pub wait: Duration,
    /// `--busy-429`: answer a busy SKU with 429 instead of 409.
    pub busy_429: bool,
    /// `--reservation-ms`: how long the reserve strategy holds a unit (the range of
    /// [`check_ttl`], as the `ttl_ms` query parameter).
    pub reservation_ttl: Duration,
    /// `--report-every-ms`: the period of the scheduled stock report, run by one instance
    /// per slot ([`super::report`]); none without the flag.
    pub report_every: Option<Duration>,
    /// `--instance`: this instance's name in the report's lines (default: its process id).
    pub instance: String,
    /// `--admin-token` (else `ADMIN_TOKEN`): the admin console at `/admin` behind that token
    /// ([`crate::admin`]); none without.
    pub admin: Option<TokenAuth>,
}

// The flags `ShopConfig::from_args` accepts.
const APP_FLAGS: &[&str] = &[
    "port",
    "strategy",
    "backend",
    "redis-url",
    "namespace",
    "sku",
    "stock",
    "wait-ms",
    "busy-429",
    "reservation-ms",
    "report-every-ms",
    "instance",
    ADMIN_TOKEN_FLAG,
];

impl ShopConfig {
    /// Parses the app's arguments (after the program name); the SKU and reservation TTL must
    /// pass the checks requests do.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let flags = Flags::parse(args, APP_FLAGS)?;
        let port = flags.number("port", 8080)?;
        let config = Self {
            port: u16::try_from(port).map_err(|_| format!("--port {port} is not a port"))?,
            strategy: Strategy::parse(flags.get("strategy").unwrap_or("atomic"))?,
            backend: flags.backend()?,
            redis_url: redis_url(&flags),
            namespace: flags.get("namespace").unwrap_or("flash").to_owned(),
            sku: flags.get("sku").unwrap_or("sku-1").to_owned(),
            seed: flags
                .get("stock")
                .map(|_| flags.number("stock", 0))
                .transpose()?,
            wait: Duration::from_millis(flags.number("wait-ms", 10_000)?),
            busy_429: flags.get("busy-429").is_some_and(|v| v != "false"),
            reservation_ttl: Duration::from_millis(flags.number("reservation-ms", 30_000)?),
            report_every: flags
                .get("report-every-ms")
                .map(|_| {
                    flags
                        .number("report-every-ms", 0)
                        .map(Duration::from_millis)
                })
                .transpose()?,
            instance: flags
                .get("instance")
                .map_or_else(|| std::process::id().to_string(), str::to_owned),
            admin: flags.admin_auth()?,
        };
        if let Some(every) = config.report_every {
            super::report::check_period(every).map_err(|e| format!("--report-every-ms: {e}"))?;
        }
        check_sku(&config.sku).map_err(|e| format!("--{e}"))?;
        check_ttl(config.reservation_ttl).map_err(|e| format!("--reservation-ms: {e}"))?;
        Ok(config)
    }

    /// The defaults with `strategy` on memory (for in-process tests).
    #[must_use]
    pub fn memory(strategy: Strategy) -> Self {
        Self::from_args(["--strategy".to_owned(), strategy.name().to_owned()])
            .expect("the defaults parse")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ShopConfig, String> {
        ShopConfig::from_args(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn the_seeded_sku_and_reservation_ttl_follow_the_request_rules() {
        assert!(parse(&["--sku", "café", "--reservation-ms", "30"]).is_ok());
        assert!(parse(&["--sku", &"s".repeat(crate::shop::MAX_SKU_LEN + 1)]).is_err());
        assert!(parse(&["--reservation-ms", "0"]).is_err());
        assert!(parse(&["--reservation-ms", "86400001"]).is_err());
    }
}
