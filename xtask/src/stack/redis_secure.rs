//! A production-like Redis set: TLS only, ACL users, AOF persistence, watched by a sentinel,
//! running Redis 8.0.2 built from source ([`super::redis8`]; `WAITAOF` needs Redis 7.2+, Debian
//! bookworm has 7.0). A primary `redis-secure-primary` (127.0.0.1:26431), a replica
//! `redis-secure-replica` (26432, `replicaof` the primary) and one sentinel
//! `redis-secure-sentinel` (26433; `redis-server sentinel.conf --sentinel`) monitoring it as
//! `lock-secure` with quorum 1, down-after 1 s, failover timeout 3 s. Brought up with
//! `stack up --redis-secure` (or `--with redis-secure`, or by naming the backend).
//!
//! All three listen only on TLS (`port 0`, `tls-port`), with one certificate for 127.0.0.1
//! signed by one private CA for the whole set ([`super::certs`], in the primary's state dir,
//! `tls/`, made when the primary starts); clients show no certificate (`tls-auth-clients no`);
//! the replica replicates and the sentinel talks to the data nodes over TLS
//! (`tls-replication yes`). Nobody gets in without a password (`user default off`): clients
//! log in as `lock` / `lock-secure-pass` to the data nodes (`~* &* +@all`) and to the sentinel
//! (`allchannels +@all`); a data node replicates as `replica` (`+psync +replconf +ping`, set as
//! `masteruser` on both data nodes, as either may be a replica after a failover); the sentinel
//! logs in to the data nodes as `sentinel`, with the commands Sentinel's documentation lists.
//! Data nodes keep an AOF (`appendonly yes`, `appendfsync always`, no RDB snapshots) in
//! `data/` of their state dir, emptied at every start: every start of the set is fresh. The
//! fsync policy is the one a server that acknowledges grants on disk (`WAITAOF`) runs with:
//! under `everysec` a `WAITAOF` waits for the next once-a-second fsync, up to a second.
//! Each node's `redis.conf` and the sentinel's `sentinel.conf` are written fresh at every start
//! (a failover rewrites them).
//!
//! Variables: `LOCK_TEST_REDIS_SECURE_SENTINEL_URL` (the sentinel),
//! `LOCK_TEST_REDIS_SECURE_SERVICE` (`lock-secure`), `LOCK_TEST_REDIS_SECURE_NODES` (the
//! running data nodes, comma-separated), all `rediss://lock:lock-secure-pass@127.0.0.1:<port>/`,
//! and `LOCK_TEST_REDIS_SECURE_CA` (the CA's PEM file). Ports:
//! `LOCK_STACK_REDIS_SECURE_PRIMARY_PORT`, `LOCK_STACK_REDIS_SECURE_REPLICA_PORT`,
//! `LOCK_STACK_REDIS_SECURE_SENTINEL_PORT`.
//!
//! As for the Sentinel set ([`super::redis_sentinel`]), the set is one unit for `up`: naming any
//! member brings up all three, and `up` while some member is down restarts the whole set afresh
//! (primary on 26431 again, empty data), and says so. The replica is ready once its link to
//! the primary is up (`master_link_status:up`); the set is ready when one data node is the
//! primary with the other as its linked replica, and the sentinel names that primary and knows
//! its replica; `up` waits for it (bounded). The probes speak TLS, so they run the built
//! `redis-cli --tls` (as `lock`), each bounded in time.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::certs::{self, make_certificates};
use super::redis::Redis;
use super::redis_sentinel::{self, check_set, quoted, SentinelView};
use super::{configured_port, redis8, resp, Server, StateDir, POLL_INTERVAL};
use crate::{cmd, Error, Result};

/// A data node: 0 is the primary, 1 its replica (at start; a failover may swap them).
pub(crate) struct SecureNode(usize);

/// The set's sentinel.
pub(crate) struct SecureSentinel;

/// The data nodes, then the sentinel: the start order.
pub(crate) const SECURE_SET: &[&dyn Server] = &[&SecureNode(0), &SecureNode(1), &SecureSentinel];

/// The data nodes of [`SECURE_SET`].
const DATA_NODES: &[&dyn Server] = &[&SecureNode(0), &SecureNode(1)];

/// The sentinel of [`SECURE_SET`], as a list.
const SENTINELS: &[&dyn Server] = &[&SecureSentinel];

/// The backend name that stands for the whole set.
pub(crate) const BACKEND: &str = "redis-secure";

/// The name under which the sentinel monitors the primary.
pub(crate) const SERVICE: &str = "lock-secure";

/// Env var holding [`SERVICE`].
const SERVICE_ENV: &str = "LOCK_TEST_REDIS_SECURE_SERVICE";

/// Env var naming the CA's PEM file.
const CA_ENV: &str = "LOCK_TEST_REDIS_SECURE_CA";

/// The clients' user, on the data nodes and on the sentinel.
const USER: &str = "lock";

/// [`USER`]'s password.
const PASSWORD: &str = "lock-secure-pass";

/// The user a replica logs in to its primary as.
const REPLICA_USER: &str = "replica";

/// [`REPLICA_USER`]'s password.
const REPLICA_PASSWORD: &str = "lock-secure-replica-pass";

/// The user the sentinel logs in to the data nodes as.
const SENTINEL_USER: &str = "sentinel";

/// [`SENTINEL_USER`]'s password.
const SENTINEL_PASSWORD: &str = "lock-secure-sentinel-pass";

/// What Sentinel needs on the data nodes, as its documentation lists it ("Redis Access Control
/// List authentication").
const SENTINEL_PERMISSIONS: &str = "allchannels +multi +slaveof +ping +exec +subscribe \
     +config|rewrite +role +publish +info +client|setname +client|kill +script|kill";

/// What a replica needs on its primary to replicate.
const REPLICA_PERMISSIONS: &str = "+psync +replconf +ping";

/// How long the set may take, once every member answers, until the sentinel knows it.
const SET_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one `redis-cli` probe may take before it is killed (a paused node must not hang
/// `stack status`).
const CLI_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the set's CA and its server certificate and key are: `tls/` in the primary's state dir.
fn tls_dir() -> PathBuf {
    certs::dir_of(&SecureNode(0))
}

/// The CA's PEM file of the running (or next) set.
fn ca_file() -> PathBuf {
    tls_dir().join("ca.crt")
}

/// A client URL for 127.0.0.1:`port`, logged in as [`USER`].
fn url(port: u16) -> String {
    format!("rediss://{USER}:{PASSWORD}@127.0.0.1:{port}/")
}

impl Server for SecureNode {
    fn name(&self) -> &'static str {
        ["redis-secure-primary", "redis-secure-replica"][self.0]
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    /// Debian's `redis-server` is too old (7.0) and is not used: `missing_packages` asks for
    /// none for this set, and [`redis8`] builds Redis 8 instead.
    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26431 + u16::try_from(self.0).unwrap_or(0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_REDIS_SECURE_PRIMARY_PORT",
            "LOCK_STACK_REDIS_SECURE_REPLICA_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_SECURE_NODES"
    }

    fn url(&self, port: u16) -> String {
        url(port)
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        vec![(CA_ENV, ca_file().display().to_string())]
    }

    /// The Redis 8 build's `redis-server`.
    fn locate(&self) -> Option<PathBuf> {
        redis8::server()
    }

    /// Makes the set's certificates (the primary, which starts first), empties `data/`, writes
    /// a fresh `redis.conf` into the state dir and runs `redis-server redis.conf`, which
    /// daemonizes.
    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        if self.0 == 0 {
            make_certificates(&tls_dir())?;
        }
        let data = state.dir.join("data");
        if data.exists() {
            fs::remove_dir_all(&data)
                .map_err(|err| Error::failed(format!("cannot empty {}: {err}", data.display())))?;
        }
        fs::create_dir_all(&data)
            .map_err(|err| Error::failed(format!("cannot create {}: {err}", data.display())))?;
        let primary = (self.0 > 0)
            .then(|| configured_port(&SecureNode(0)))
            .transpose()?;
        let path = state.dir.join("redis.conf");
        fs::write(&path, node_conf(port, primary, state, &tls_dir()))
            .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))?;
        cmd::run(&mut cmd::command(program, [&path]))
    }

    fn ping(&self, port: u16) -> bool {
        cli(port, &["PING"]).is_some_and(|reply| reply == "PONG")
    }

    /// The replica: linked to its primary too.
    fn ready(&self, port: u16) -> bool {
        self.ping(port)
            && (self.0 == 0
                || replication(port)
                    .is_some_and(|info| resp::field(&info, "master_link_status") == Some("up")))
    }
}

impl Server for SecureSentinel {
    fn name(&self) -> &'static str {
        "redis-secure-sentinel"
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    /// Not used: see [`SecureNode::apt_package`].
    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26433
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_REDIS_SECURE_SENTINEL_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_SECURE_SENTINEL_URL"
    }

    fn url(&self, port: u16) -> String {
        url(port)
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (SERVICE_ENV, SERVICE.to_owned()),
            (CA_ENV, ca_file().display().to_string()),
        ]
    }

    /// The Redis 8 build's `redis-server`.
    fn locate(&self) -> Option<PathBuf> {
        redis8::server()
    }

    /// Writes a fresh `sentinel.conf` (a sentinel rewrites its config as it learns) and runs
    /// `redis-server sentinel.conf --sentinel`, which daemonizes (named `redis-server`, so the
    /// default process name fits).
    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let primary = configured_port(&SecureNode(0))?;
        let path = state.dir.join("sentinel.conf");
        fs::write(&path, sentinel_conf(port, primary, state, &tls_dir()))
            .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))?;
        let mut sentinel = cmd::command(program, [path.as_os_str()]);
        sentinel.arg("--sentinel");
        cmd::run(&mut sentinel)
    }

    fn ping(&self, port: u16) -> bool {
        cli(port, &["PING"]).is_some_and(|reply| reply == "PONG")
    }
}

/// The TLS and process lines every member's config has: listening only on TLS on
/// 127.0.0.1:`port` with the certificates in `tls`, replicating (and, for the sentinel,
/// talking to the data nodes) over TLS, daemonized with pidfile and log in `state`.
fn common_conf(port: u16, state: &StateDir, tls: &Path) -> String {
    format!(
        "bind 127.0.0.1\n\
         port 0\n\
         tls-port {port}\n\
         tls-cert-file {cert}\n\
         tls-key-file {key}\n\
         tls-ca-cert-file {ca}\n\
         tls-auth-clients no\n\
         tls-replication yes\n\
         daemonize yes\n\
         pidfile {pidfile}\n\
         logfile {logfile}\n",
        cert = quoted(&tls.join("server.crt")),
        key = quoted(&tls.join("server.key")),
        ca = quoted(&tls.join("ca.crt")),
        pidfile = quoted(&state.pidfile),
        logfile = quoted(&state.logfile),
    )
}

/// A data node's config: [`common_conf`], the users, AOF in `data/` of `state`, and for a
/// replica `replicaof` the primary on `primary`.
fn node_conf(port: u16, primary: Option<u16>, state: &StateDir, tls: &Path) -> String {
    let mut conf = common_conf(port, state, tls);
    conf.push_str(&format!(
        "dir {dir}\n\
         appendonly yes\n\
         appendfsync always\n\
         save \"\"\n\
         replica-announce-ip 127.0.0.1\n\
         repl-diskless-sync-delay 0\n\
         enable-debug-command local\n\
         user default off\n\
         user {USER} on >{PASSWORD} ~* &* +@all\n\
         user {REPLICA_USER} on >{REPLICA_PASSWORD} {REPLICA_PERMISSIONS}\n\
         user {SENTINEL_USER} on >{SENTINEL_PASSWORD} {SENTINEL_PERMISSIONS}\n\
         masteruser {REPLICA_USER}\n\
         masterauth {REPLICA_PASSWORD}\n",
        dir = quoted(&state.dir.join("data")),
    ));
    if let Some(primary) = primary {
        conf.push_str(&format!("replicaof 127.0.0.1 {primary}\n"));
    }
    conf
}

/// The sentinel's config: [`common_conf`], clients' user [`USER`], monitoring the primary on
/// `primary` as [`SERVICE`], logged in to the data nodes as [`SENTINEL_USER`].
fn sentinel_conf(port: u16, primary: u16, state: &StateDir, tls: &Path) -> String {
    let mut conf = common_conf(port, state, tls);
    conf.push_str(&format!(
        "dir {dir}\n\
         user default off\n\
         user {USER} on >{PASSWORD} allchannels +@all\n\
         sentinel monitor {SERVICE} 127.0.0.1 {primary} 1\n\
         sentinel auth-user {SERVICE} {SENTINEL_USER}\n\
         sentinel auth-pass {SERVICE} {SENTINEL_PASSWORD}\n\
         sentinel down-after-milliseconds {SERVICE} 1000\n\
         sentinel failover-timeout {SERVICE} 3000\n\
         sentinel parallel-syncs {SERVICE} 1\n",
        dir = quoted(&state.dir),
    ));
    conf
}

/// Runs `args` on 127.0.0.1:`port` with the built `redis-cli` over TLS (checked against the
/// set's CA), logged in as [`USER`]; its output, if it exits successfully within
/// [`CLI_TIMEOUT`] (killed after that). `None` before Redis 8 is built.
fn cli(port: u16, args: &[&str]) -> Option<String> {
    let mut cli = Command::new(redis8::cli()?);
    cli.args(["--tls", "--cacert"])
        .arg(ca_file())
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["--user", USER, "--pass", PASSWORD, "--no-auth-warning"])
        .args(args);
    output_within(cli, CLI_TIMEOUT)
}

/// Runs `command` (stdin closed, stderr dropped) and returns its trimmed stdout if it exits
/// successfully within `timeout`; kills it otherwise.
fn output_within(mut command: Command, timeout: Duration) -> Option<String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on the side, so a reply larger than the pipe's buffer cannot stall the child.
    let reader = thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).ok().map(|_| text)
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => {
                // Killing fails only if it exited meanwhile; either way it is reaped here.
                child.kill().ok();
                child.wait().ok();
                break None;
            }
        }
    };
    let text = reader.join().ok().flatten()?;
    status
        .filter(|status| status.success())
        .map(|_| text.trim().to_owned())
}

/// The `INFO replication` text of the data node on `port`.
fn replication(port: u16) -> Option<String> {
    cli(port, &["INFO", "replication"])
}

/// What the sentinel on `port` says about [`SERVICE`] (`redis-cli` prints an array one item a
/// line: the address's host and port, `SENTINEL master`'s keys and values).
fn sentinel_view(port: u16) -> SentinelView {
    let primary = cli(port, &["SENTINEL", "get-master-addr-by-name", SERVICE])
        .and_then(|addr| addr.lines().nth(1).and_then(|p| p.trim().parse().ok()));
    let master = cli(port, &["SENTINEL", "master", SERVICE]);
    let count = |key: &str| -> Option<u64> {
        let master = master.as_deref()?;
        let lines: Vec<&str> = master.lines().map(str::trim).collect();
        lines
            .chunks_exact(2)
            .find(|pair| pair[0] == key)
            .and_then(|pair| pair[1].parse().ok())
    };
    SentinelView {
        primary,
        replicas: count("num-slaves"),
        others: count("num-other-sentinels"),
    }
}

/// `servers`, with the whole set in its start order after the others when any member is among
/// them: the set comes up as a whole.
pub(super) fn with_whole_set(servers: &[&'static dyn Server]) -> Vec<&'static dyn Server> {
    redis_sentinel::with_whole(SECURE_SET, servers)
}

/// Whether `server` belongs to the set.
pub(super) fn is_member(server: &dyn Server) -> bool {
    SECURE_SET.iter().any(|m| m.name() == server.name())
}

/// Before `up` of the set (`servers` names a member): if some members run and some do not,
/// stops the running ones, so that the whole set starts afresh. Returns the names of the
/// members it stopped.
pub(super) fn reset_if_partial(servers: &[&'static dyn Server]) -> Result<Vec<&'static str>> {
    redis_sentinel::reset_set_if_partial(BACKEND, SECURE_SET, servers)
}

/// For `stack status`, when the sentinel runs: the primary it names (which after a failover is
/// not `redis-secure-primary`).
pub(super) fn status_line() -> Result<Option<String>> {
    let ports = super::running_ports(SENTINELS)?;
    let Some(&port) = ports.first() else {
        return Ok(None);
    };
    let view = sentinel_view(port);
    let line = match view.primary {
        Some(primary) => format!(
            "{BACKEND}: sentinel {port} names primary 127.0.0.1:{primary} for {SERVICE} ({} \
             replicas known)",
            view.replicas
                .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        ),
        None => format!("{BACKEND}: sentinel {port} names no primary for {SERVICE}"),
    };
    Ok(Some(line))
}

/// After `up` of the set: waits (at most [`SET_TIMEOUT`]) until one data node is the primary,
/// the other its linked replica, and the sentinel names that primary and knows the replica.
pub(super) fn wait_set() -> Result<()> {
    let data_ports = super::running_ports(DATA_NODES)?;
    let sentinel_ports = super::running_ports(SENTINELS)?;
    if data_ports.len() < DATA_NODES.len() || sentinel_ports.len() < SENTINELS.len() {
        return Err(Error::failed(format!(
            "{BACKEND}: not every member runs after `up`; see `cargo xtask stack status`"
        )));
    }
    let began = Instant::now();
    let deadline = began + SET_TIMEOUT;
    loop {
        let data: Vec<_> = data_ports
            .iter()
            .map(|&port| (port, replication(port)))
            .collect();
        let views: Vec<_> = sentinel_ports
            .iter()
            .map(|&port| (port, sentinel_view(port)))
            .collect();
        match check_set(&data, &views) {
            Ok(primary) => {
                println!(
                    "{BACKEND}: ready in {:.1}s; primary 127.0.0.1:{primary}, known to the \
                     sentinel as {SERVICE} with its replica",
                    began.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            Err(why) if Instant::now() >= deadline => {
                return Err(Error::failed(format!(
                    "{BACKEND}: not ready after {}s: {why}",
                    SET_TIMEOUT.as_secs()
                )));
            }
            Err(_) => thread::sleep(POLL_INTERVAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::{node_conf, output_within, sentinel_conf, with_whole_set, StateDir};
    use crate::stack::Server;

    fn state(name: &str) -> StateDir {
        let dir = PathBuf::from("/w/target/stack").join(name);
        StateDir {
            pidfile: dir.join(format!("{name}.pid")),
            logfile: dir.join(format!("{name}.log")),
            portfile: dir.join("port"),
            dir,
        }
    }

    fn has_lines(conf: &str, lines: &[&str]) {
        for line in lines {
            assert!(
                conf.lines().any(|l| l == *line),
                "{line:?} missing:\n{conf}"
            );
        }
    }

    const TLS: &str = "/w/target/stack/redis-secure-primary/tls";

    #[test]
    fn data_nodes_speak_tls_only_with_users_and_aof() {
        let conf = node_conf(
            26432,
            Some(26431),
            &state("redis-secure-replica"),
            Path::new(TLS),
        );
        has_lines(
            &conf,
            &[
                "bind 127.0.0.1",
                "port 0",
                "tls-port 26432",
                "tls-cert-file \"/w/target/stack/redis-secure-primary/tls/server.crt\"",
                "tls-key-file \"/w/target/stack/redis-secure-primary/tls/server.key\"",
                "tls-ca-cert-file \"/w/target/stack/redis-secure-primary/tls/ca.crt\"",
                "tls-auth-clients no",
                "tls-replication yes",
                "daemonize yes",
                "pidfile \"/w/target/stack/redis-secure-replica/redis-secure-replica.pid\"",
                "logfile \"/w/target/stack/redis-secure-replica/redis-secure-replica.log\"",
                "dir \"/w/target/stack/redis-secure-replica/data\"",
                "appendonly yes",
                "appendfsync always",
                "save \"\"",
                "user default off",
                "user lock on >lock-secure-pass ~* &* +@all",
                "user replica on >lock-secure-replica-pass +psync +replconf +ping",
                "masteruser replica",
                "masterauth lock-secure-replica-pass",
                "replicaof 127.0.0.1 26431",
            ],
        );
        assert!(conf.contains("user sentinel on >lock-secure-sentinel-pass allchannels "));
        let primary = node_conf(26431, None, &state("redis-secure-primary"), Path::new(TLS));
        assert!(!primary.contains("replicaof"), "{primary}");
        has_lines(&primary, &["masteruser replica", "tls-port 26431"]);
    }

    #[test]
    fn the_sentinel_monitors_over_tls_as_its_user() {
        let conf = sentinel_conf(
            26433,
            26431,
            &state("redis-secure-sentinel"),
            Path::new(TLS),
        );
        has_lines(
            &conf,
            &[
                "port 0",
                "tls-port 26433",
                "tls-replication yes",
                "dir \"/w/target/stack/redis-secure-sentinel\"",
                "user default off",
                "user lock on >lock-secure-pass allchannels +@all",
                "sentinel monitor lock-secure 127.0.0.1 26431 1",
                "sentinel auth-user lock-secure sentinel",
                "sentinel auth-pass lock-secure lock-secure-sentinel-pass",
                "sentinel down-after-milliseconds lock-secure 1000",
                "sentinel failover-timeout lock-secure 3000",
            ],
        );
    }

    #[test]
    fn any_member_brings_the_whole_set() {
        let names = |servers: Vec<&'static dyn Server>| -> Vec<&'static str> {
            servers.iter().map(|s| s.name()).collect()
        };
        let by_name = |name| crate::stack::by_name(name).expect(name);
        assert_eq!(
            names(with_whole_set(&[
                by_name("redis-secure-sentinel"),
                by_name("redis")
            ])),
            [
                "redis",
                "redis-secure-primary",
                "redis-secure-replica",
                "redis-secure-sentinel"
            ]
        );
        assert_eq!(
            crate::stack::by_name("redis-secure-replica")
                .map(|s| s.url(26432))
                .as_deref(),
            Some("rediss://lock:lock-secure-pass@127.0.0.1:26432/")
        );
    }

    #[test]
    fn a_probe_is_bounded_in_time() {
        let mut echo = std::process::Command::new("echo");
        echo.arg("PONG");
        assert_eq!(
            output_within(echo, Duration::from_secs(5)).as_deref(),
            Some("PONG")
        );
        let mut sleep = std::process::Command::new("sleep");
        sleep.arg("5");
        let began = std::time::Instant::now();
        assert_eq!(output_within(sleep, Duration::from_millis(200)), None);
        assert!(began.elapsed() < Duration::from_secs(3));
        assert_eq!(
            output_within(std::process::Command::new("false"), Duration::from_secs(5)),
            None
        );
    }
}
