//! Workspace automation, run as `cargo xtask <command>`.
//!
//! Follows the [xtask](https://github.com/matklad/cargo-xtask) convention
//! (shaped after rust-analyzer's): one file per task, std only, so that it
//! builds in seconds and needs nothing but a Rust toolchain. The `xtask`
//! alias lives in `.cargo/config.toml`.
//!
//! Tasks:
//! - [`stack`]: start/stop the local database servers the integration suites
//!   talk to, on private ports so they never clash with system services.
//! - [`test`]: the README's test command; brings the stack up around
//!   `cargo test`.
//! - [`ci`]: everything CI runs (`.ci/run` calls it), ending with [`test`].
//! - [`run`]: shortcuts for the harness binaries (`demo`, `stress`, `bench`, `chaos`)
//!   and the demo scenarios (`demo inventory`, `demo stampede`, `demo idempotency`,
//!   `demo crash`, `demo leader`, `demo operator`).

mod bench_against;
mod ci;
mod cmd;
mod demo_deps;
mod flags;
mod run;
mod stack;
mod test;

use std::fmt;
use std::process::ExitCode;

/// Usage text printed for `--help` and on usage errors; the server list
/// and their port variables come from [`stack::SERVERS`], so adding a server
/// updates the help without touching this text.
fn usage() -> String {
    let names = stack::known_names();
    let mut ports = String::new();
    for server in stack::SERVERS {
        ports.push_str(&format!(
            "  {:<30}Port for the stack's {} (default {}).\n",
            server.port_env(),
            server.name(),
            server.default_port()
        ));
    }
    format!(
        "\
Usage: cargo xtask <COMMAND> [ARGS...]

Commands:
  stack up [--with <SERVERS>]   Start local test servers (idempotent).
                                SERVERS: comma-separated names or `all`
                                (default: all). Known: {names}.
                                `--with chromium` (not a server, not in
                                `all`): installs Debian's chromium and
                                chromium-driver for the admin console's
                                browser test, which starts its own
                                chromedriver; env LOCK_TEST_CHROMEDRIVER,
                                LOCK_TEST_CHROMIUM.
  stack up --zk-ensemble|--etcd-cluster
                                A 3-member ZooKeeper ensemble (zookeeper-1..3,
                                client ports 22281/22291/22301) or etcd cluster
                                (etcd-1..3, 22479/22489/22499) on loopback, in
                                addition to --with; URLs in
                                LOCK_TEST_ZOOKEEPER_ENSEMBLE_URL and
                                LOCK_TEST_ETCD_CLUSTER_URL. `--with zookeeper-2`
                                names one member (e.g. to stop it).
  stack up --redlock            RedLock's 5 independent Redis nodes
                                (redlock-1..5, ports 26391..26395); URLs in
                                LOCK_TEST_REDLOCK_URLS. `--backend redlock`
                                brings them up too.
  stack up --redis-cluster      A Redis Cluster: 6 nodes (redis-cluster-1..6,
                                ports 26401..26406, bus port + 10000), 3
                                primaries with 1 replica each, formed with
                                `redis-cli --cluster create` once all 6 run;
                                URLs in LOCK_TEST_REDIS_CLUSTER_URLS. A node
                                stopped with `--with redis-cluster-2` rejoins
                                when started again.
  stack up --redis-sentinel     A Sentinel-watched Redis: primary
                                redis-sentinel-primary (26411), replicas
                                redis-sentinel-replica-1/2 (26412, 26413),
                                sentinels redis-sentinel-1..3 (26421..26423)
                                monitoring `lock-primary`; URLs in
                                LOCK_TEST_REDIS_SENTINEL_URLS (sentinels),
                                LOCK_TEST_REDIS_SENTINEL_NODES (data nodes),
                                service name in LOCK_TEST_REDIS_SENTINEL_SERVICE.
                                Comes up as a whole: with any member down
                                (e.g. after a failover test), `up` restarts
                                all six afresh. `--backend redis-cluster` /
                                `redis-sentinel` bring the sets up too, and
                                `--with redis-cluster` / `--with redis-sentinel`
                                (or `--with redlock`) name a whole set.
  stack up --redis-secure       A production-like Sentinel set on Redis 8.0.2
                                (built from Debian's source into target/stack/
                                on first use, ~2 min; WAITAOF needs 7.2+): TLS
                                only (private CA), ACL users (clients log in as
                                lock / lock-secure-pass), AOF; primary
                                redis-secure-primary (26431), replica
                                redis-secure-replica (26432), sentinel
                                redis-secure-sentinel (26433) monitoring
                                `lock-secure`; URLs in
                                LOCK_TEST_REDIS_SECURE_SENTINEL_URL,
                                LOCK_TEST_REDIS_SECURE_NODES, service name in
                                LOCK_TEST_REDIS_SECURE_SERVICE, CA's file in
                                LOCK_TEST_REDIS_SECURE_CA. Comes up as a whole,
                                like --redis-sentinel; `--with redis-secure`
                                names it too.
  stack down [--with <SERVERS>] [--zk-ensemble] [--etcd-cluster] [--redlock]
             [--redis-cluster] [--redis-sentinel] [--redis-secure]
                                Stop the servers that `stack up` started;
                                never touches servers it did not start.
  stack status                  Show each known server: running or stopped
                                (and the Redis Cluster's state, the Sentinel
                                sets' current primaries).
  test [CARGO_TEST_ARGS...]     Bring the stack up (every single server, the
                                Redis Cluster and both Sentinel sets; Chromium
                                installed for the browser test), run
                                `cargo test --workspace --all-features -j 2`
                                with LOCK_TEST_* env vars set, then stop what
                                this run started. Args go to `cargo test`.
  ci                            fmt check, clippy, per-feature checks of
                                lock-core, `test`, then `chaos --short` and
                                the stampede, idempotency, inventory and
                                operator demos on Redis.
                                Stops at first failure.
  demo [ARGS...]                cargo run -p lock-harness --bin demo -- ARGS
                                (no ARGS: the lock demo, then `demo inventory`
                                and `demo idempotency` on memory)
  demo inventory [--backend memory|redis|postgres|mysql] [--strategy S|all]
                 [--instances N] [--buyers B] [--stock S]
                                The flash sale over HTTP: builds the example
                                apps, runs N instances, fires B buyers and
                                prints sold/rejected/oversold per strategy
                                (PostgreSQL and MySQL: for-update, optimistic,
                                conditional, reserve).
  demo stampede [--backend memory|redis] [--instances N] [--clients C] [--redis-url URL]
                                Cache stampede over HTTP (release build): N
                                axum/actix instances share one cache; a cold
                                key hit by C clients at once, then a hot key
                                expiring under steady load. PASS/FAIL each.
  demo idempotency [--backend memory|redis|postgres] [--instances N] [--clients C] [--keys K]
                                Idempotent payments over HTTP (release build):
                                N axum/actix instances share one backend; K
                                keys sent as concurrent duplicates, retried
                                after completion, reused with another amount.
                                PASS when each payment ran and moved money once.
  demo crash [--backend redis|postgres|all] [--rounds N] [--per-round M] [--proxied P]
             [--unsafe-separate-commit]
                                Payments killed at their end (release build):
                                a kill -9 sweep across the handler's end, and a
                                process stalled from its records after its
                                payment committed, then killed; per store
                                configuration. PASS when every key was paid
                                once and answered with that payment.
  demo leader [--instances N] [--every-ms MS] [--slots S] [--redis-url URL]
                                A scheduled job on N (3) instances of
                                flash-sale-axum sharing Redis (release build):
                                a stock report every MS (500) run by one
                                instance per slot (LockClient::run_once), the
                                instance that ran one killed halfway. PASS when
                                every slot ran exactly once, fences increasing.
  demo operator [--redis-url URL]
                                The operator's tools on Redis: starts
                                flash-sale-axum with its admin console
                                (--admin-token), holds order:42 with three
                                waiters, checks the admin API, then runs
                                `lockctl show`, `lockctl release --reason`
                                and `lockctl audit` against it; PASS/FAIL
                                per step (the holder's lost() revoked, the
                                first waiter granted with a larger fencing
                                token, the audit record).
  stress [ARGS...]              cargo run --release -p lock-harness --bin stress -- ARGS
                                (`--backend <server>` brings that server up first)
  bench [ARGS...]               cargo run --release -p lock-harness --bin bench -- ARGS
                                (`--backend <server>` brings that server up first;
                                `--load`: a busy process on every core beside it;
                                `--only fair|uncontended|cache-layer|idempotency`: one figure)
  bench --against REV [--backend redis|memory] [--rounds N] [--iterations N]
                                The uncontended acquire+release of this build
                                against the build at REV (a worktree under
                                target/bench-against/), in alternating rounds:
                                the median ratio after/before
  bench --allocations [--backend memory|redis] [--cycles N]
                                Allocations per uncontended acquire+release beside
                                the floor's, and the top allocation sites (a DHAT
                                profile in target/bench/dhat-<backend>.json)
  chaos [--backend B|all] [--scenario N|all] [--short] [--unsafe-no-fence] [--unsafe-ignore-lost] ...
                                The fault catalogue (release build): worker
                                processes lock through each backend and write
                                through a fenced resource; faults: SIGSTOP,
                                SIGKILL, a fault proxy, early expiry, Redis
                                restart, a paused server, a starved runtime,
                                dropped acquires, 1,000 waiters, cluster
                                members killed (13 scenarios). One table
                                (scenario x backend: ops,
                                faults, stale writes accepted, overlaps,
                                latency p50/p99, verdict); exits 1 on any
                                violation. `--short`: 1 round on Redis and
                                ZooKeeper (what `ci` runs). `chaos --help`
                                lists every flag.
  help, -h, --help              Show this text.

Environment:
{ports}  LOCK_STACK_REDIS_CLUSTER_<N>_PORT, LOCK_STACK_REDIS_SENTINEL_PRIMARY_PORT,
  LOCK_STACK_REDIS_SENTINEL_REPLICA_<N>_PORT, LOCK_STACK_REDIS_SENTINEL_<N>_PORT,
  LOCK_STACK_REDIS_SECURE_PRIMARY_PORT, LOCK_STACK_REDIS_SECURE_REPLICA_PORT,
  LOCK_STACK_REDIS_SECURE_SENTINEL_PORT
                                Ports of the Redis Cluster's and the Sentinel
                                sets' members (defaults above).

State (pidfiles, logs, data) lives in target/stack/; target/stack/env holds
the KEY=value lines (e.g. LOCK_TEST_REDIS_URL) for the running servers.
"
    )
}

/// Result type of every task; the error carries the process exit code.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// A task failure: what to tell the user and which exit code to end with.
///
/// Tasks never panic on bad input; they return one of these and `main`
/// turns it into a message on stderr plus an exit code.
#[derive(Debug)]
pub(crate) struct Error {
    /// Human-readable explanation; empty when the failing child process has
    /// already said everything (its output went straight to the terminal).
    message: String,
    /// Process exit code: 2 for usage errors, a child's own code when passing
    /// it through, 1 otherwise.
    code: u8,
}

impl Error {
    /// Exit code for command-line usage errors (unknown command or flag),
    /// following the common convention (e.g. bash builtins, getopt users).
    const USAGE_CODE: u8 = 2;

    /// A bad command line: unknown command, unknown flag, missing value.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: Self::USAGE_CODE,
        }
    }

    /// Any other failure (server did not start, I/O error, ...): exit code 1.
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 1,
        }
    }

    /// A failure that should end xtask with a specific exit code, used to
    /// pass a child's exit code through (`cargo test` failing with 101 makes
    /// `cargo xtask test` exit 101, so callers can't tell the difference).
    pub(crate) fn exit(code: u8, message: impl Into<String>) -> Self {
        // Exit code 0 would report success for a failure; never allow it.
        Self {
            message: message.into(),
            code: code.max(1),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn main() -> ExitCode {
    let result = flags::parse(std::env::args_os().skip(1)).and_then(|task| match task {
        flags::Task::Help => {
            print!("{}", usage());
            Ok(())
        }
        flags::Task::Stack(cmd) => stack::run(cmd),
        flags::Task::Test { cargo_args } => test::run(&cargo_args),
        flags::Task::Ci => ci::run(),
        flags::Task::Harness { bin, args } => run::run(bin, &args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if err.code == Error::USAGE_CODE {
                // Usage errors get the full usage text so the fix is visible
                // without a second invocation; the error comes last, where
                // the eye lands, not above the usage.
                eprintln!("{}", usage());
            }
            if !err.message.is_empty() {
                eprintln!("xtask: error: {err}");
            }
            ExitCode::from(err.code)
        }
    }
}
