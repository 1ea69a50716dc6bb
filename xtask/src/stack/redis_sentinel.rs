//! A Sentinel-watched Redis on loopback: a primary `redis-sentinel-primary` (127.0.0.1:26411),
//! two replicas `redis-sentinel-replica-1/2` (26412, 26413; `--replicaof` the primary), and
//! three sentinels `redis-sentinel-1..3` (26421..26423; `redis-server sentinel.conf
//! --sentinel`) monitoring it as `lock-primary` with quorum 2, down-after 1 s, failover
//! timeout 3 s. Data nodes have no persistence. Brought up with `stack up --redis-sentinel`
//! or by naming the backend (`--backend redis-sentinel`).
//!
//! Variables: `LOCK_TEST_REDIS_SENTINEL_URLS` (the running sentinels, comma-separated),
//! `LOCK_TEST_REDIS_SENTINEL_SERVICE` (`lock-primary`) and `LOCK_TEST_REDIS_SENTINEL_NODES`
//! (the running data nodes, for failover tests that kill or pause the primary). Ports:
//! `LOCK_STACK_REDIS_SENTINEL_PRIMARY_PORT`, `LOCK_STACK_REDIS_SENTINEL_REPLICA_<n>_PORT`,
//! `LOCK_STACK_REDIS_SENTINEL_<n>_PORT`.
//!
//! The set is one unit for `up`: naming any member brings up all six. Sentinels rewrite their
//! config as they learn (replicas, other sentinels, a new primary after a failover), so each
//! sentinel's `sentinel.conf` in its state dir is written fresh at every start. A member that
//! is down would not come back right on its own (an old primary restarted after a failover
//! would be a second primary; a sentinel would have forgotten the others), so the rule is:
//! **`stack up` of the set while some member is down stops the whole set and starts it afresh**
//! (new primary on 26411, empty data), and says so. Members that were running before such a
//! restart count as not started by that `up` (as already-running servers do), so
//! `cargo xtask test` leaves them running afterwards. `down` of single members works as for
//! any server.
//!
//! A replica is ready once its link to the primary is up (`master_link_status:up`); the
//! sentinels start after the replicas, so their first look at the primary sees both. The set
//! is ready when one data node is the primary and the two others are its linked replicas, and
//! every sentinel names that primary (`SENTINEL get-master-addr-by-name`) and has found the two
//! replicas and the two other sentinels (`SENTINEL master`: `num-slaves`,
//! `num-other-sentinels`); `up` waits for it (bounded).

use std::fs;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::redis::{launch_throwaway, Redis};
use super::resp::{self, Reply};
use super::{configured_port, state, stop_one, Server, State, StateDir, POLL_INTERVAL};
use crate::{cmd, Error, Result};

/// A data node: 0 is the primary, 1 and 2 its replicas (at start; a failover may change that).
pub(crate) struct DataNode(usize);

/// A sentinel (0-based).
pub(crate) struct Sentinel(usize);

/// The data nodes, then the sentinels: the start order (replicas after the primary they
/// replicate, sentinels after the replicas they should find).
pub(crate) const SENTINEL_SET: &[&dyn Server] = &[
    &DataNode(0),
    &DataNode(1),
    &DataNode(2),
    &Sentinel(0),
    &Sentinel(1),
    &Sentinel(2),
];

/// The data nodes of [`SENTINEL_SET`].
const DATA_NODES: &[&dyn Server] = &[&DataNode(0), &DataNode(1), &DataNode(2)];

/// The sentinels of [`SENTINEL_SET`].
const SENTINELS: &[&dyn Server] = &[&Sentinel(0), &Sentinel(1), &Sentinel(2)];

/// The backend name that stands for the whole set.
pub(crate) const BACKEND: &str = "redis-sentinel";

/// The name under which the sentinels monitor the primary.
pub(crate) const SERVICE: &str = "lock-primary";

/// Env var holding [`SERVICE`].
const SERVICE_ENV: &str = "LOCK_TEST_REDIS_SENTINEL_SERVICE";

/// How long the set may take, once every member answers, until the sentinels know it all
/// (they discover each other through hello messages every 2 s).
const SET_TIMEOUT: Duration = Duration::from_secs(30);

impl Server for DataNode {
    fn name(&self) -> &'static str {
        [
            "redis-sentinel-primary",
            "redis-sentinel-replica-1",
            "redis-sentinel-replica-2",
        ][self.0]
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26411 + u16::try_from(self.0).unwrap_or(0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_REDIS_SENTINEL_PRIMARY_PORT",
            "LOCK_STACK_REDIS_SENTINEL_REPLICA_1_PORT",
            "LOCK_STACK_REDIS_SENTINEL_REPLICA_2_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_SENTINEL_NODES"
    }

    fn url(&self, port: u16) -> String {
        Redis.url(port)
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let port = port.to_string();
        let mut redis = cmd::command(program, ["--bind", "127.0.0.1", "--port", &port]);
        redis.args(["--replica-announce-ip", "127.0.0.1"]);
        // A replica's first sync starts at once, not after the default 5 s a diskless sync
        // waits for more replicas: the data is empty, and `up` waits for the links.
        redis.args(["--repl-diskless-sync-delay", "0"]);
        // Failover tests may pause a node with `DEBUG SLEEP` (refused by default since Redis 7).
        redis.args(["--enable-debug-command", "local"]);
        if self.0 > 0 {
            let primary = configured_port(&DataNode(0))?.to_string();
            redis.args(["--replicaof", "127.0.0.1", &primary]);
        }
        launch_throwaway(&mut redis, state)
    }

    fn ping(&self, port: u16) -> bool {
        Redis.ping(port)
    }

    /// A replica: linked to its primary too.
    fn ready(&self, port: u16) -> bool {
        self.ping(port)
            && (self.0 == 0
                || replication(port)
                    .is_some_and(|info| resp::field(&info, "master_link_status") == Some("up")))
    }
}

impl Server for Sentinel {
    fn name(&self) -> &'static str {
        ["redis-sentinel-1", "redis-sentinel-2", "redis-sentinel-3"][self.0]
    }

    fn binary(&self) -> &'static str {
        Redis.binary()
    }

    fn apt_package(&self) -> &'static str {
        Redis.apt_package()
    }

    fn default_port(&self) -> u16 {
        26421 + u16::try_from(self.0).unwrap_or(0)
    }

    fn port_env(&self) -> &'static str {
        [
            "LOCK_STACK_REDIS_SENTINEL_1_PORT",
            "LOCK_STACK_REDIS_SENTINEL_2_PORT",
            "LOCK_STACK_REDIS_SENTINEL_3_PORT",
        ][self.0]
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_REDIS_SENTINEL_URLS"
    }

    fn url(&self, port: u16) -> String {
        Redis.url(port)
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        vec![(SERVICE_ENV, SERVICE.to_owned())]
    }

    /// Writes a fresh `sentinel.conf` into the state dir (a sentinel rewrites its config, so
    /// one left from an earlier run would carry that run's replicas, sentinels and primary) and
    /// runs `redis-server sentinel.conf --sentinel`, which daemonizes (the process is named
    /// `redis-server` like a data node's, so the default process name fits).
    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let primary = configured_port(&DataNode(0))?;
        let path = state.dir.join("sentinel.conf");
        fs::write(&path, sentinel_conf(port, primary, state))
            .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))?;
        let mut sentinel = cmd::command(program, [path.as_os_str()]);
        sentinel.arg("--sentinel");
        cmd::run(&mut sentinel)
    }

    fn ping(&self, port: u16) -> bool {
        Redis.ping(port)
    }
}

/// A sentinel's config: listening on 127.0.0.1:`port`, daemonized with pidfile, log and
/// working dir in `state`, monitoring the primary on `primary` as [`SERVICE`].
fn sentinel_conf(port: u16, primary: u16, state: &StateDir) -> String {
    format!(
        "port {port}\n\
         bind 127.0.0.1\n\
         daemonize yes\n\
         pidfile {pidfile}\n\
         logfile {logfile}\n\
         dir {dir}\n\
         sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n\
         sentinel down-after-milliseconds {SERVICE} 1000\n\
         sentinel failover-timeout {SERVICE} 3000\n\
         sentinel parallel-syncs {SERVICE} 1\n",
        pidfile = quoted(&state.pidfile),
        logfile = quoted(&state.logfile),
        dir = quoted(&state.dir),
    )
}

/// `path` as a double-quoted redis config argument, so a checkout path with spaces works.
pub(super) fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The `INFO replication` text of the node on `port`.
fn replication(port: u16) -> Option<String> {
    resp::query(port, &["INFO", "replication"])?
        .text()
        .map(str::to_owned)
}

/// `servers`, with the whole set in its start order after the others when any member is
/// among them: the set comes up as a whole, data nodes first.
pub(super) fn with_whole_set(servers: &[&'static dyn Server]) -> Vec<&'static dyn Server> {
    with_whole(SENTINEL_SET, servers)
}

/// `servers`, with the whole of `set` in its start order after the others when any member of
/// `set` is among them: what [`with_whole_set`] does for this set, shared with the other
/// Sentinel-watched set ([`super::redis_secure`]).
pub(super) fn with_whole(
    set: &'static [&'static dyn Server],
    servers: &[&'static dyn Server],
) -> Vec<&'static dyn Server> {
    let member = |s: &dyn Server| set.iter().any(|m| m.name() == s.name());
    if !servers.iter().any(|&s| member(s)) {
        return servers.to_vec();
    }
    let mut all: Vec<_> = servers.iter().copied().filter(|&s| !member(s)).collect();
    all.extend_from_slice(set);
    all
}

/// Whether `server` belongs to the set.
pub(super) fn is_member(server: &dyn Server) -> bool {
    SENTINEL_SET.iter().any(|m| m.name() == server.name())
}

/// Before `up` of the set (`servers` names a member): if some members run and some do not,
/// stops the running ones, so that the whole set starts afresh. Returns the names of the
/// members it stopped.
pub(super) fn reset_if_partial(servers: &[&'static dyn Server]) -> Result<Vec<&'static str>> {
    reset_set_if_partial(BACKEND, SENTINEL_SET, servers)
}

/// What [`reset_if_partial`] does, for any Sentinel-watched `set` (named `backend` in what it
/// prints): shared with [`super::redis_secure`].
pub(super) fn reset_set_if_partial(
    backend: &str,
    set: &'static [&'static dyn Server],
    servers: &[&'static dyn Server],
) -> Result<Vec<&'static str>> {
    if !servers
        .iter()
        .any(|&s| set.iter().any(|m| m.name() == s.name()))
    {
        return Ok(Vec::new());
    }
    let mut up = Vec::new();
    let mut down = Vec::new();
    // Alive but not answering: down for the set, yet a process to stop before the restart.
    let mut hung = Vec::new();
    for &member in set {
        match state(member)? {
            State::Running { .. } => up.push(member),
            State::Unresponsive { .. } => {
                hung.push(member);
                down.push(member.name());
            }
            State::Stopped | State::Stale { .. } => down.push(member.name()),
        }
    }
    if up.is_empty() || down.is_empty() {
        return Ok(Vec::new());
    }
    println!(
        "{backend}: {} not running; restarting the whole set fresh (a member restarted alone \
         would not know the current primary)",
        down.join(", ")
    );
    for &member in up.iter().chain(&hung) {
        stop_one(member)?;
    }
    Ok(up.iter().map(|s| s.name()).collect())
}

/// What one sentinel says about the service it monitors ([`SERVICE`] here).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct SentinelView {
    /// Port of the primary it names.
    pub(super) primary: Option<u16>,
    /// `num-slaves`.
    pub(super) replicas: Option<u64>,
    /// `num-other-sentinels`.
    pub(super) others: Option<u64>,
}

impl SentinelView {
    /// Asks the sentinel on `port`.
    fn of(port: u16) -> Self {
        let primary = match resp::query(port, &["SENTINEL", "get-master-addr-by-name", SERVICE]) {
            Some(Reply::Array(Some(addr))) => addr.get(1).and_then(Reply::text).map(str::to_owned),
            _ => None,
        };
        let master = resp::query(port, &["SENTINEL", "master", SERVICE]);
        let count = |key| master.as_ref()?.pair(key)?.parse().ok();
        Self {
            primary: primary.and_then(|port| port.parse().ok()),
            replicas: count("num-slaves"),
            others: count("num-other-sentinels"),
        }
    }
}

/// For `stack status`, when any sentinel runs: the primary the first running one names (which
/// after a failover is not `redis-sentinel-primary`).
pub(super) fn status_line() -> Result<Option<String>> {
    let ports = super::running_ports(SENTINELS)?;
    let Some(&port) = ports.first() else {
        return Ok(None);
    };
    let view = SentinelView::of(port);
    let line = match view.primary {
        Some(primary) => format!(
            "{BACKEND}: sentinel {port} names primary 127.0.0.1:{primary} for {SERVICE} \
             ({} replicas, {} other sentinels known)",
            view.replicas
                .map_or_else(|| "?".to_owned(), |n| n.to_string()),
            view.others
                .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        ),
        None => format!("{BACKEND}: sentinel {port} names no primary for {SERVICE}"),
    };
    Ok(Some(line))
}

/// Whether the set is ready: the port of its primary, or why not. `data` holds each data
/// node's port and `INFO replication` text (`None`: no answer), `sentinels` each sentinel's
/// port and view. Also the check of [`super::redis_secure`]'s set.
pub(super) fn check_set(
    data: &[(u16, Option<String>)],
    sentinels: &[(u16, SentinelView)],
) -> std::result::Result<u16, String> {
    let primaries: Vec<u16> = data
        .iter()
        .filter(|(_, info)| {
            info.as_deref()
                .is_some_and(|info| resp::field(info, "role") == Some("master"))
        })
        .map(|(port, _)| *port)
        .collect();
    let [primary] = primaries[..] else {
        return Err(format!(
            "{} data nodes are primaries, not 1",
            primaries.len()
        ));
    };
    for (port, info) in data.iter().filter(|(port, _)| *port != primary) {
        let info = info.as_deref().unwrap_or_default();
        let linked = resp::field(info, "role") == Some("slave")
            && resp::number(info, "master_port") == Some(u64::from(primary))
            && resp::field(info, "master_link_status") == Some("up");
        if !linked {
            return Err(format!("{port} is not a linked replica of {primary}"));
        }
    }
    let replicas = (data.len() - 1) as u64;
    let others = (sentinels.len() - 1) as u64;
    for (port, view) in sentinels {
        if view.primary != Some(primary) {
            return Err(format!(
                "sentinel {port} names primary {:?}, not {primary}",
                view.primary
            ));
        }
        if view.replicas != Some(replicas) || view.others != Some(others) {
            return Err(format!(
                "sentinel {port} knows {:?} replicas and {:?} other sentinels, not {replicas} and \
                 {others}",
                view.replicas, view.others
            ));
        }
    }
    Ok(primary)
}

/// After `up` of the set: waits (at most [`SET_TIMEOUT`]) until [`check_set`] passes.
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
            .map(|&port| (port, SentinelView::of(port)))
            .collect();
        match check_set(&data, &views) {
            Ok(primary) => {
                println!(
                    "{BACKEND}: ready in {:.1}s; primary 127.0.0.1:{primary}, known to every \
                     sentinel as {SERVICE} with its replicas and the other sentinels",
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
    use std::path::PathBuf;

    use super::{check_set, sentinel_conf, with_whole_set, SentinelView, StateDir};
    use crate::stack::Server;

    fn primary(slaves: u32) -> Option<String> {
        Some(format!(
            "# Replication\r\nrole:master\r\nconnected_slaves:{slaves}\r\n"
        ))
    }

    fn replica(of: u16, link: &str) -> Option<String> {
        Some(format!(
            "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:{of}\r\n\
             master_link_status:{link}\r\n"
        ))
    }

    fn view(primary: u16, replicas: u64, others: u64) -> SentinelView {
        SentinelView {
            primary: Some(primary),
            replicas: Some(replicas),
            others: Some(others),
        }
    }

    #[test]
    fn a_set_is_ready_when_all_agree() {
        let data = [
            (26411, primary(2)),
            (26412, replica(26411, "up")),
            (26413, replica(26411, "up")),
        ];
        let views = [
            (26421, view(26411, 2, 2)),
            (26422, view(26411, 2, 2)),
            (26423, view(26411, 2, 2)),
        ];
        assert_eq!(check_set(&data, &views), Ok(26411));

        // After a failover to 26412, with the old primary back as a replica.
        let data = [
            (26411, replica(26412, "up")),
            (26412, primary(2)),
            (26413, replica(26412, "up")),
        ];
        let views = [
            (26421, view(26412, 2, 2)),
            (26422, view(26412, 2, 2)),
            (26423, view(26412, 2, 2)),
        ];
        assert_eq!(check_set(&data, &views), Ok(26412));
    }

    #[test]
    fn a_set_is_not_ready_while_anything_lags() {
        let ready_data = || {
            vec![
                (26411, primary(2)),
                (26412, replica(26411, "up")),
                (26413, replica(26411, "up")),
            ]
        };
        let ready_views = || {
            vec![
                (26421, view(26411, 2, 2)),
                (26422, view(26411, 2, 2)),
                (26423, view(26411, 2, 2)),
            ]
        };
        let mut data = ready_data();
        data[2].1 = replica(26411, "down");
        assert!(check_set(&data, &ready_views()).is_err());
        let mut data = ready_data();
        data[1].1 = None;
        assert!(check_set(&data, &ready_views()).is_err());
        let mut data = ready_data();
        data[1].1 = primary(0);
        assert!(check_set(&data, &ready_views()).is_err());
        let mut views = ready_views();
        views[0].1 = view(26411, 2, 1);
        assert!(check_set(&ready_data(), &views).is_err());
        let mut views = ready_views();
        views[2].1 = view(26411, 1, 2);
        assert!(check_set(&ready_data(), &views).is_err());
        let mut views = ready_views();
        views[1].1 = SentinelView::default();
        assert!(check_set(&ready_data(), &views).is_err());
    }

    #[test]
    fn sentinel_conf_has_every_directive() {
        let dir = PathBuf::from("/w/target/stack/redis-sentinel-2");
        let state = StateDir {
            pidfile: dir.join("redis-sentinel-2.pid"),
            logfile: dir.join("redis-sentinel-2.log"),
            portfile: dir.join("port"),
            dir: dir.clone(),
        };
        let conf = sentinel_conf(26422, 26411, &state);
        for line in [
            "port 26422",
            "bind 127.0.0.1",
            "daemonize yes",
            "pidfile \"/w/target/stack/redis-sentinel-2/redis-sentinel-2.pid\"",
            "logfile \"/w/target/stack/redis-sentinel-2/redis-sentinel-2.log\"",
            "dir \"/w/target/stack/redis-sentinel-2\"",
            "sentinel monitor lock-primary 127.0.0.1 26411 2",
            "sentinel down-after-milliseconds lock-primary 1000",
            "sentinel failover-timeout lock-primary 3000",
            "sentinel parallel-syncs lock-primary 1",
        ] {
            assert!(conf.lines().any(|l| l == line), "{line:?} missing:\n{conf}");
        }
    }

    #[test]
    fn any_member_brings_the_whole_set() {
        let names = |servers: Vec<&'static dyn Server>| -> Vec<&'static str> {
            servers.iter().map(|s| s.name()).collect()
        };
        let by_name = |name| crate::stack::by_name(name).expect(name);
        assert_eq!(
            names(with_whole_set(&[
                by_name("redis-sentinel-2"),
                by_name("redis")
            ])),
            [
                "redis",
                "redis-sentinel-primary",
                "redis-sentinel-replica-1",
                "redis-sentinel-replica-2",
                "redis-sentinel-1",
                "redis-sentinel-2",
                "redis-sentinel-3"
            ]
        );
        assert_eq!(names(with_whole_set(&[by_name("redis")])), ["redis"]);
    }
}
