//! `cargo xtask stack up|down|status`: local database servers for the
//! integration suites.
//!
//! Every server runs on 127.0.0.1 on a private port (e.g. redis on 26379,
//! not 6379) with all state under `target/stack/<name>/`, so the stack never
//! collides with, and never touches, servers installed on the machine.
//! "Ours" is defined by our pidfile: `down` only signals a pid read from
//! `target/stack/<name>/<name>.pid`, and only if that pid still belongs to
//! the expected program.
//!
//! Adding a server (zookeeper, etcd, postgres, mysql) means one new file
//! implementing [`Server`] plus one entry in [`SERVERS`]; the lifecycle
//! (install, start, readiness wait, stop, status, env file) is shared here.
//!
//! Sets of servers (clusters, RedLock's nodes, a Redis Cluster, a Sentinel-watched Redis) are
//! one [`Server`] per member; what concerns a set as a whole is done by `up` after its members
//! started: forming the Redis Cluster ([`redis_cluster`]), and for the Sentinel set
//! ([`redis_sentinel`]) bringing up (or restarting) all six members together and waiting until
//! the sentinels know the primary, its replicas and each other; likewise for the TLS, ACL and
//! AOF Sentinel set of Redis 8 ([`redis_secure`]), whose Redis is built from source
//! ([`redis8`]) before anything starts.
//!
//! One name is not a server: `chromium` ([`chromium`]), Debian's Chromium and its WebDriver,
//! which the admin console's browser test drives. `--with chromium` installs them; the test
//! starts its own `chromedriver` on a free port, so nothing runs, listens or is stopped here,
//! and the env file names the two programs while they are installed.

mod certs;
mod chromium;
mod cluster;
mod etcd;
mod etcd_tls;
mod kazoo;
mod mysql;
mod mysql_tls;
mod postgres;
mod postgres_tls;
mod redis;
mod redis8;
mod redis_cluster;
mod redis_secure;
mod redis_sentinel;
mod redis_tls;
mod redlock;
mod resp;
mod zookeeper;
mod zookeeper_tls;

use std::fs;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::cmd;
use crate::flags::StackCmd;
use crate::{Error, Result};

/// Every server the stack knows, in start order.
pub(crate) const SERVERS: &[&dyn Server] = &[
    &redis::Redis,
    &redis_tls::RedisTls,
    &zookeeper::ZooKeeper,
    &zookeeper_tls::ZooKeeperTls,
    &etcd::Etcd,
    &etcd_tls::EtcdTls,
    &postgres::Postgres,
    &postgres_tls::PostgresTls,
    &mysql::Mysql,
    &mysql_tls::MysqlTls,
];

/// How long a server may take to answer after being started (or to exit
/// after SIGTERM). Bounded so a broken server fails CI quickly instead of
/// hanging it; local servers with empty data dirs are ready well within it.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Grace period after SIGKILL, used only if SIGTERM did not work.
const KILL_TIMEOUT: Duration = Duration::from_secs(2);

/// How often readiness and exit are re-checked while waiting.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Timeout of a single connect/read/write of a readiness probe; short so one
/// hung attempt cannot eat the whole [`READY_TIMEOUT`].
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Lines of a server's log shown when it fails to start.
const LOG_TAIL_LINES: usize = 20;

/// Env var the integration suites read to decide that a missing server is a
/// failure rather than a reason to skip.
pub(crate) const REQUIRE_SERVERS_ENV: &str = "LOCK_TEST_REQUIRE_SERVERS";

/// One kind of server the stack can run.
///
/// Implementations describe *what* to run; the shared code in this module
/// decides *when*, and owns pidfiles, waiting and stopping.
pub(crate) trait Server: Sync {
    /// Name on the command line (`--with redis`) and of its state dir.
    fn name(&self) -> &'static str;

    /// Executable to look up on PATH (and to install when missing).
    fn binary(&self) -> &'static str;

    /// Debian/Ubuntu package providing [`Server::binary`].
    fn apt_package(&self) -> &'static str;

    /// Port used unless [`Server::port_env`] overrides it. Deliberately not
    /// the server's well-known port, so a system instance can keep running.
    fn default_port(&self) -> u16;

    /// Env var overriding the port, e.g. `LOCK_STACK_REDIS_PORT`.
    fn port_env(&self) -> &'static str;

    /// Env var through which the test suites and harness find the server,
    /// e.g. `LOCK_TEST_REDIS_URL`.
    fn url_env(&self) -> &'static str;

    /// Client URL for the server listening on `port`.
    fn url(&self, port: u16) -> String;

    /// What else the suites need to reach it, beside [`Server::url_env`] (the TLS redis: its
    /// CA's file).
    fn extra_env(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Launches the server in the background on 127.0.0.1:`port`.
    ///
    /// Must return once the launch command returned, leaving a detached
    /// process that writes its pid to `state.pidfile`, its log to
    /// `state.logfile` and its data under `state.dir`. The process must run
    /// with its working directory inside `state.dir` (redis: `--dir`; a
    /// server spawned directly: `Command::current_dir`): that is how a pid
    /// from our pidfile is recognized as still ours before we signal it.
    /// Readiness is checked afterwards by the caller through
    /// [`Server::ping`].
    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()>;

    /// Whether the server on `port` answers a protocol-level request (a TCP
    /// connect alone is not enough: the port opens before it serves).
    fn ping(&self, port: u16) -> bool;

    /// Whether a server just started on `port` is ready for what starts after it: what `up`
    /// waits for. Defaults to [`Server::ping`]; may ask for more than being alive (a Sentinel
    /// set's replica: its link to the primary is up), which [`Server::ping`] must not, as it
    /// also decides whether a running server counts as running.
    fn ready(&self, port: u16) -> bool {
        self.ping(port)
    }

    /// Finds the executable. Defaults to a PATH lookup of
    /// [`Server::binary`]; servers installed off PATH override this.
    fn locate(&self) -> Option<PathBuf> {
        cmd::which(self.binary())
    }

    /// Process name (`/proc/<pid>/comm`) of the running server, used to make
    /// sure a pid from our pidfile was not recycled by an unrelated process
    /// before we signal it. Override for servers started through a wrapper
    /// (e.g. `java`).
    fn process_name(&self) -> &'static str {
        self.binary()
    }
}

/// The server named `name`, if known (single servers and cluster members such as `zookeeper-2`).
pub(crate) fn by_name(name: &str) -> Option<&'static dyn Server> {
    SERVERS
        .iter()
        .copied()
        .chain(cluster::members())
        .find(|server| server.name() == name)
}

pub(crate) use chromium::NAME as CHROMIUM;
pub(crate) use cluster::{ETCD_CLUSTER, ZK_ENSEMBLE};
pub(crate) use redis_cluster::REDIS_CLUSTER;
pub(crate) use redis_secure::SECURE_SET;
pub(crate) use redis_sentinel::SENTINEL_SET;
pub(crate) use redlock::REDLOCK_NODES;

/// The servers a `--backend` value needs: RedLock's nodes for `redlock`, the six nodes of the
/// Redis Cluster for `redis-cluster`, the Sentinel set's six processes for `redis-sentinel`,
/// the secure set's three for `redis-secure`, else the server of that name (none for `memory`).
pub(crate) fn for_backend(name: &str) -> Vec<&'static dyn Server> {
    match name {
        redlock::BACKEND => REDLOCK_NODES.to_vec(),
        redis_cluster::BACKEND => REDIS_CLUSTER.to_vec(),
        redis_sentinel::BACKEND => SENTINEL_SET.to_vec(),
        redis_secure::BACKEND => SECURE_SET.to_vec(),
        _ => by_name(name).into_iter().collect(),
    }
}

/// What `cargo xtask test` runs the suites against: every single server, the Redis Cluster,
/// the Sentinel set and the secure (TLS, ACL, AOF) Sentinel set.
pub(crate) fn for_tests() -> Vec<&'static dyn Server> {
    SERVERS
        .iter()
        .chain(REDIS_CLUSTER)
        .chain(SENTINEL_SET)
        .chain(SECURE_SET)
        .copied()
        .collect()
}

/// Comma-separated list of known server names, for error messages.
pub(crate) fn known_names() -> String {
    SERVERS
        .iter()
        .map(|server| server.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where one server keeps its state: `target/stack/<name>/`.
pub(crate) struct StateDir {
    /// The directory itself; also the server's data directory.
    pub(crate) dir: PathBuf,
    /// Pidfile the server writes (`<name>.pid`); its presence marks the
    /// server as started by us.
    pub(crate) pidfile: PathBuf,
    /// Server log (`<name>.log`), tailed when startup fails.
    pub(crate) logfile: PathBuf,
    /// Port the running instance was started on, so `status`/`down` keep
    /// working even if the port env var changed since `up`.
    portfile: PathBuf,
}

impl StateDir {
    /// The state dir of `server`.
    fn of(server: &dyn Server) -> Self {
        let dir = stack_dir().join(server.name());
        Self {
            pidfile: dir.join(format!("{}.pid", server.name())),
            logfile: dir.join(format!("{}.log", server.name())),
            portfile: dir.join("port"),
            dir,
        }
    }

    /// The pid in the pidfile, if there is a plausible one.
    ///
    /// Rejects 0, 1 and values above `i32::MAX`: `kill` treats 0 and
    /// negative pids as process groups (-1: every process), so a corrupt
    /// pidfile must never reach it.
    fn pid(&self) -> Option<u32> {
        let text = fs::read_to_string(&self.pidfile).ok()?;
        let pid: u32 = text.trim().parse().ok()?;
        (pid > 1 && i32::try_from(pid).is_ok()).then_some(pid)
    }

    /// The recorded port of the running instance, if any.
    fn recorded_port(&self) -> Option<u16> {
        fs::read_to_string(&self.portfile).ok()?.trim().parse().ok()
    }

    /// Forgets a stopped instance: removes pidfile and port record.
    fn clear(&self) -> Result<()> {
        remove_if_exists(&self.pidfile)?;
        remove_if_exists(&self.portfile)
    }
}

/// `target/stack/`, parent of all state dirs and of the env file.
fn stack_dir() -> PathBuf {
    cmd::project_root().join("target").join("stack")
}

/// `target/stack/env`: `KEY=value` lines for the running servers, for
/// tools outside xtask (`set -a; . target/stack/env`, IDE run configs).
pub(crate) fn env_file() -> PathBuf {
    stack_dir().join("env")
}

/// What we know about one server.
enum State {
    /// No pidfile: not started by us (something else may still use the port).
    Stopped,
    /// A pidfile whose process is gone (or is no longer the server).
    Stale {
        /// The pid from the pidfile, if it was readable.
        pid: Option<u32>,
    },
    /// Our process is alive but does not answer (yet).
    Unresponsive {
        /// Pid from our pidfile.
        pid: u32,
        /// Port it was started on.
        port: u16,
    },
    /// Our process is alive and answers.
    Running {
        /// Pid from our pidfile.
        pid: u32,
        /// Port it listens on.
        port: u16,
    },
}

/// Inspects pidfile, process and port of `server`.
fn state(server: &dyn Server) -> Result<State> {
    let dir = StateDir::of(server);
    if !dir.pidfile.exists() {
        return Ok(State::Stopped);
    }
    let Some(pid) = dir.pid() else {
        return Ok(State::Stale { pid: None });
    };
    if !process_alive(pid, server.process_name()) || !runs_in(pid, &dir.dir) {
        return Ok(State::Stale { pid: Some(pid) });
    }
    let port = match dir.recorded_port() {
        Some(port) => port,
        None => configured_port(server)?,
    };
    Ok(if server.ping(port) {
        State::Running { pid, port }
    } else {
        State::Unresponsive { pid, port }
    })
}

/// The ports of those of `servers` that run (answer), in order.
fn running_ports(servers: &[&dyn Server]) -> Result<Vec<u16>> {
    let mut ports = Vec::new();
    for &server in servers {
        if let State::Running { port, .. } = state(server)? {
            ports.push(port);
        }
    }
    Ok(ports)
}

/// The port `server` should use now: its env override or its default.
fn configured_port(server: &dyn Server) -> Result<u16> {
    let var = server.port_env();
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => match value.trim().parse::<u16>() {
            Ok(port) if port != 0 => Ok(port),
            _ => Err(Error::usage(format!(
                "{var}={value:?} is not a valid port (expected 1-65535)"
            ))),
        },
        // Unset or empty: the default. Non-UTF-8 cannot be a port either.
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(server.default_port()),
        Err(std::env::VarError::NotUnicode(value)) => Err(Error::usage(format!(
            "{var}={value:?} is not a valid port (expected 1-65535)"
        ))),
    }
}

/// Whether `pid` is a live (not zombie) process named `name`.
///
/// On Linux this reads `/proc` (no process spawn per poll, and zombies count
/// as dead: in containers PID 1 often never reaps the daemons we orphaned,
/// so `kill -0` would report a stopped server as alive forever). Elsewhere
/// it falls back to `kill -0`, without the name check.
fn process_alive(pid: u32, name: &str) -> bool {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if Path::new("/proc/self").exists() {
        let Ok(stat) = fs::read_to_string(proc_dir.join("stat")) else {
            return false;
        };
        // The state letter follows the parenthesised command name, which
        // may itself contain spaces or ')', hence the last ')'.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if matches!(state, None | Some("Z" | "X" | "x")) {
            return false;
        }
        let Ok(comm) = fs::read_to_string(proc_dir.join("comm")) else {
            return false;
        };
        // The kernel truncates comm to 15 bytes (TASK_COMM_LEN - 1).
        let expected = &name.as_bytes()[..name.len().min(15)];
        return comm.trim_end_matches('\n').as_bytes() == expected;
    }
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether process `pid` has its working directory inside `dir`.
///
/// Together with the name check in [`process_alive`] this is how we tell
/// "our" server from an unrelated one that happens to reuse the pid from a
/// stale pidfile (after a reboot, say): another redis-server passes the name
/// check but does not run in *our* state dir. Only checked on Linux; the
/// link is unreadable for other users' processes, which are not ours anyway.
fn runs_in(pid: u32, dir: &Path) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    let Ok(cwd) = fs::read_link(format!("/proc/{pid}/cwd")) else {
        return false;
    };
    // Compare canonical paths: the state dir may be reached via a symlink.
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    cwd.starts_with(dir)
}

/// A TCP connection to 127.0.0.1:`port` with [`PROBE_TIMEOUT`] on connect,
/// reads and writes; `None` if nothing accepts. Shared by the `ping`s.
pub(crate) fn connect(port: u16) -> Option<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    Some(stream)
}

/// Sends `request` to 127.0.0.1:`port` and reads the reply to EOF (the
/// probe protocols here answer and close: ZooKeeper's four-letter words,
/// HTTP/1.0); `None` if nothing answers.
pub(crate) fn ask(port: u16, request: &[u8]) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = connect(port)?;
    stream.write_all(request).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    Some(reply)
}

/// Launches a server that stays in the foreground (java, etcd) as a detached
/// background process: its own process group (a Ctrl-C to xtask does not
/// reach it), working directory `state.dir`, stdin closed, stdout and stderr
/// appended to `state.logfile`, pid written to `state.pidfile`.
pub(crate) fn spawn_detached(mut command: Command, state: &StateDir) -> Result<()> {
    use std::os::unix::process::CommandExt as _;
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&state.logfile)
        .map_err(|err| Error::failed(format!("cannot open {}: {err}", state.logfile.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|err| Error::failed(format!("cannot open {}: {err}", state.logfile.display())))?;
    command
        .current_dir(&state.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    cmd::echo(&command);
    let child = command.spawn().map_err(|err| {
        Error::failed(format!("cannot start `{}`: {err}", cmd::display(&command)))
    })?;
    fs::write(&state.pidfile, format!("{}\n", child.id()))
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", state.pidfile.display())))
}

/// Debian packages that are not servers but must be present before anything
/// builds the `etcd` feature: `etcd-client`'s build script runs `protoc`, and
/// needs the well-known `.proto` files of `libprotobuf-dev` (a mere
/// recommendation of `protobuf-compiler`, so `--no-install-recommends` skips it).
const BUILD_PACKAGES: &[(&str, &str)] = &[
    ("/usr/bin/protoc", "protobuf-compiler"),
    (
        "/usr/include/google/protobuf/descriptor.proto",
        "libprotobuf-dev",
    ),
];

/// Installs (as root, with apt) every missing server package and build
/// package, and Chromium with its WebDriver (the admin console's browser test), in one
/// `apt-get install`, so that `cargo xtask ci` / `test` can build and test every backend on
/// a fresh machine. Not root: prints the command to run and fails.
pub(crate) fn ensure_installed() -> Result<()> {
    install_missing(&for_tests(), &chromium::missing_packages())
}

/// Installs Chromium and its WebDriver when missing (`stack up --with chromium`).
fn install_chromium() -> Result<()> {
    apt_install(&chromium::missing_packages())
}

/// Installs the packages of whichever of `servers` are missing, plus the
/// build packages when etcd is among them (whoever starts etcd is about to
/// build the `etcd` feature), in one `apt-get install`. Without root or apt,
/// fails with the exact command to run instead: never sudo on the user's
/// behalf. With ZooKeeper among them, then makes sure `python3` imports kazoo
/// (whoever starts ZooKeeper is about to run the kazoo interop suite). With a member of the
/// secure set among them, installs what building Redis 8 needs in the same `apt-get install`,
/// then builds it ([`redis8`]) unless it is built. `extra`: more missing packages for the same
/// `apt-get install` (Chromium's, for `cargo xtask test`).
fn install_missing(servers: &[&dyn Server], extra: &[&'static str]) -> Result<()> {
    let zookeeper = servers.iter().any(|server| server.name() == "zookeeper");
    let mut packages = missing_packages(servers);
    for &package in extra {
        if !packages.contains(&package) {
            packages.push(package);
        }
    }
    if zookeeper && kazoo::python_missing() {
        packages.push(kazoo::APT_PACKAGE);
    }
    // The TLS servers' certificates are made with `openssl`.
    let secure = servers
        .iter()
        .any(|&server| redis_secure::is_member(server));
    let tls = secure || servers.iter().any(|server| server.name().ends_with("-tls"));
    if tls && cmd::which("openssl").is_none() {
        packages.push(certs::OPENSSL_PACKAGE);
    }
    // The TLS etcd's users are set up with `etcdctl`.
    let etcd_tls = servers.iter().any(|server| server.name() == "etcd-tls");
    if etcd_tls && cmd::which("etcdctl").is_none() {
        packages.push(etcd_tls::ETCDCTL_PACKAGE);
    }
    // The Redis Cluster is formed with `redis-cli --cluster create`.
    let redis_cluster = servers.iter().any(|server| {
        REDIS_CLUSTER
            .iter()
            .any(|node| node.name() == server.name())
    });
    if redis_cluster && cmd::which(redis_cluster::REDIS_CLI).is_none() {
        packages.push(redis_cluster::REDIS_CLI_PACKAGE);
    }
    // The secure set's Redis 8 is built from source: its build tools, not a server package.
    if secure {
        for package in redis8::missing_packages() {
            if !packages.contains(&package) {
                packages.push(package);
            }
        }
    }
    apt_install(&packages)?;
    if zookeeper {
        kazoo::ensure()?;
    }
    if secure {
        redis8::ensure_built()?;
    }
    Ok(())
}

/// The Debian packages of `servers` that are not installed, plus the
/// missing build packages when etcd is among them. The secure set's members need none: their
/// Redis is built from source (see [`install_missing`]).
fn missing_packages(servers: &[&dyn Server]) -> Vec<&'static str> {
    let mut missing: Vec<&str> = servers
        .iter()
        .filter(|&&server| !redis_secure::is_member(server))
        .filter(|server| server.locate().is_none())
        .map(|server| server.apt_package())
        .collect();
    if servers.iter().any(|server| server.name() == "etcd") {
        missing.extend(
            BUILD_PACKAGES
                .iter()
                .filter(|(file, _)| !Path::new(file).exists())
                .map(|(_, package)| *package),
        );
    }
    missing
}

/// Installs the missing build packages (protoc for the `etcd` feature) alone: for a
/// harness build with lock-harness's `servers` feature (`stress`, `bench`, `chaos`), which
/// compiles etcd's client whether or not the run starts etcd.
pub(crate) fn ensure_build_tools() -> Result<()> {
    let missing: Vec<&str> = BUILD_PACKAGES
        .iter()
        .filter(|(file, _)| !Path::new(file).exists())
        .map(|(_, package)| *package)
        .collect();
    apt_install(&missing)
}

/// `apt-get install`s `missing` (nothing when empty); without root or apt,
/// fails with the command to run.
fn apt_install(missing: &[&str]) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(" ");
    if !cmd::is_root() || cmd::which("apt-get").is_none() {
        return Err(Error::failed(format!(
            "missing packages: {list}. Install them with:\n\n    \
             sudo apt-get update && sudo apt-get install -y --no-install-recommends {list}\n\n\
             (or your platform's package manager), then re-run."
        )));
    }
    eprintln!("xtask: installing missing packages: {list}");
    cmd::run(&mut cmd::command("apt-get", ["update"]))?;
    let mut install = cmd::command("apt-get", ["install", "-y", "--no-install-recommends"]);
    install.args(missing);
    // Without this, debconf may stop and ask questions on a CI box.
    install.env("DEBIAN_FRONTEND", "noninteractive");
    cmd::run(&mut install)
}

/// Entry point of `cargo xtask stack ...`.
pub(crate) fn run(cmd: StackCmd) -> Result<()> {
    match cmd {
        StackCmd::Up(selection) => {
            if selection.chromium {
                install_chromium()?;
                println!("{}", chromium::status_line());
            }
            up(&selection.servers)?;
            print_env()
        }
        StackCmd::Down(selection) => {
            if selection.chromium {
                println!("{CHROMIUM}: a tool, not a server: nothing runs, nothing to stop");
            }
            down(&selection.servers)
        }
        StackCmd::Status => status(),
    }
}

/// Starts each of `servers` that is not running yet, waiting until each
/// answers. Returns the servers this call started, which are exactly the
/// ones the caller may stop again; servers that already ran are left out.
///
/// Sets are settled afterwards: any member of the Sentinel set (or of the
/// secure set) brings the whole set (restarted afresh when some member was
/// down, see [`redis_sentinel`], [`redis_secure`]), any node of the Redis
/// Cluster has the cluster formed and serving once all six run (see
/// [`redis_cluster`]).
///
/// On failure, stops what this call had started before returning the error,
/// so a half-started stack does not linger.
pub(crate) fn up(servers: &[&'static dyn Server]) -> Result<Vec<&'static dyn Server>> {
    let servers = redis_secure::with_whole_set(&redis_sentinel::with_whole_set(servers));
    install_missing(&servers, &[])?;
    // Members of the Sentinel sets that ran before this call and were stopped for a fresh start
    // of their set: started again below, but not this call's to stop afterwards.
    let mut restarted = redis_sentinel::reset_if_partial(&servers)?;
    restarted.extend(redis_secure::reset_if_partial(&servers)?);
    let mut started = Vec::new();
    let mut result = Ok(());
    for &server in &servers {
        match up_one(server) {
            Ok(true) => started.push(server),
            Ok(false) => {}
            Err(err) => {
                result = Err(err);
                break;
            }
        }
    }
    if result.is_ok() && servers.iter().any(|&s| redis_sentinel::is_member(s)) {
        result = redis_sentinel::wait_set();
    }
    if result.is_ok() && servers.iter().any(|&s| redis_secure::is_member(s)) {
        result = redis_secure::wait_set();
    }
    let cluster = |s: &&dyn Server| REDIS_CLUSTER.iter().any(|node| node.name() == s.name());
    if result.is_ok() && servers.iter().any(cluster) {
        result = redis_cluster::settle();
    }
    if let Err(err) = result {
        if let Err(cleanup) = down(&started) {
            eprintln!("xtask: error while cleaning up: {cleanup}");
        }
        return Err(err);
    }
    write_env_file()?;
    started.retain(|s| !restarted.contains(&s.name()));
    Ok(started)
}

/// Brings one server up; `Ok(true)` if this call started it.
fn up_one(server: &dyn Server) -> Result<bool> {
    let name = server.name();
    let dir = StateDir::of(server);
    let port = configured_port(server)?;
    match state(server)? {
        State::Running { pid, port: running } => {
            println!(
                "{name}: already running (pid {pid}) at {}",
                server.url(running)
            );
            if running != port {
                println!(
                    "{name}: note: it listens on {running}, not on the requested {port}; \
                     run `cargo xtask stack down --with {name}` first to move it"
                );
            }
            return Ok(false);
        }
        State::Unresponsive { pid, port: running } => {
            // Probably still starting (e.g. a concurrent `up`); give it the
            // usual time before declaring it broken.
            println!("{name}: pid {pid} is ours but not answering yet; waiting");
            if wait_ready(server, &dir, running).is_ok() {
                println!("{name}: running (pid {pid}) at {}", server.url(running));
                return Ok(false);
            }
            return Err(Error::failed(format!(
                "{name} (pid {pid}, started by xtask) does not answer on port {running}; \
                 run `cargo xtask stack down --with {name}` and retry.\n{}",
                log_tail(&dir.logfile)
            )));
        }
        State::Stale { pid } => {
            let pid = pid.map_or_else(|| "?".to_owned(), |pid| pid.to_string());
            println!("{name}: removing stale pidfile (pid {pid} is gone)");
            dir.clear()?;
        }
        State::Stopped => {}
    }

    // Refuse to start on a port someone else already serves: the readiness
    // probe would happily talk to that other server and we would report a
    // stack that is not ours (and `down` could never stop it).
    if connect(port).is_some() {
        return Err(Error::failed(format!(
            "127.0.0.1:{port} is already in use by a process xtask did not start; \
             pick another port with {}=<port>",
            server.port_env()
        )));
    }

    let program = server.locate().ok_or_else(|| {
        Error::failed(format!(
            "`{}` is still not on PATH after installing `{}`",
            server.binary(),
            server.apt_package()
        ))
    })?;
    fs::create_dir_all(&dir.dir)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", dir.dir.display())))?;
    // A fresh log, so that the tail shown on failure is about this start.
    remove_if_exists(&dir.logfile)?;
    fs::write(&dir.portfile, format!("{port}\n"))
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", dir.portfile.display())))?;

    if let Err(err) = server.start(&program, &dir, port) {
        // A start that launched the server and then failed (setting it up) leaves it running:
        // stop it, as a server that never answers is stopped below.
        if dir.pid().is_some() {
            if let Err(cleanup) = stop_one(server) {
                eprintln!("xtask: error while cleaning up: {cleanup}");
            }
        }
        remove_if_exists(&dir.portfile)?;
        return Err(err);
    }
    match wait_ready(server, &dir, port) {
        Ok(pid) => {
            println!("{name}: started (pid {pid}) at {}", server.url(port));
            Ok(true)
        }
        Err(err) => {
            // Don't leave a half-started process behind: the next `up` would
            // find it unresponsive and refuse to continue.
            if let Err(cleanup) = stop_one(server) {
                eprintln!("xtask: error while cleaning up: {cleanup}");
            }
            Err(err)
        }
    }
}

/// Polls until `server` (started by us, per its pidfile) answers on `port`.
/// Returns its pid. Fails early if the process dies, and after
/// [`READY_TIMEOUT`] otherwise, both times with the log tail.
fn wait_ready(server: &dyn Server, dir: &StateDir, port: u16) -> Result<u32> {
    let name = server.name();
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        // The pidfile appears some time after the launch command returns
        // (the daemon writes it), so a missing one just means "not yet".
        if let Some(pid) = dir.pid() {
            if !process_alive(pid, server.process_name()) {
                return Err(Error::failed(format!(
                    "{name} (pid {pid}) exited during startup.\n{}",
                    log_tail(&dir.logfile)
                )));
            }
            if server.ready(port) {
                return Ok(pid);
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::failed(format!(
                "{name} did not answer on 127.0.0.1:{port} within {}s.\n{}",
                READY_TIMEOUT.as_secs(),
                log_tail(&dir.logfile)
            )));
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// Stops each of `servers` that we started; leaves everything else alone.
pub(crate) fn down(servers: &[&'static dyn Server]) -> Result<()> {
    // Try all of them even if one fails, then report the first failure:
    // one stuck server should not keep the others running.
    let mut first_err = None;
    for &server in servers {
        if let Err(err) = stop_one(server) {
            eprintln!("xtask: error: {err}");
            first_err.get_or_insert(err);
        }
    }
    write_env_file()?;
    first_err.map_or(Ok(()), Err)
}

/// Stops one server if our pidfile says we started it.
fn stop_one(server: &dyn Server) -> Result<()> {
    let name = server.name();
    let dir = StateDir::of(server);
    let pid = match state(server)? {
        State::Stopped => {
            println!("{name}: not running (not started by xtask; nothing to stop)");
            // A port record may survive a start that never wrote a pidfile.
            return dir.clear();
        }
        State::Stale { .. } => {
            println!("{name}: not running; removing stale pidfile");
            return dir.clear();
        }
        State::Running { pid, .. } | State::Unresponsive { pid, .. } => pid,
    };

    let pid_arg = pid.to_string();
    // kill's status is ignored on purpose: the process may exit on its own
    // between our check and the signal; waiting below is the real test.
    cmd::status(&mut cmd::command("kill", ["-TERM", pid_arg.as_str()]))?;
    if !wait_gone(pid, server.process_name(), READY_TIMEOUT) {
        eprintln!(
            "xtask: {name} (pid {pid}) ignored SIGTERM for {}s; sending SIGKILL",
            READY_TIMEOUT.as_secs()
        );
        cmd::status(&mut cmd::command("kill", ["-KILL", pid_arg.as_str()]))?;
        if !wait_gone(pid, server.process_name(), KILL_TIMEOUT) {
            return Err(Error::failed(format!(
                "{name} (pid {pid}) is still running after SIGKILL; pidfile kept at {}",
                dir.pidfile.display()
            )));
        }
    }
    dir.clear()?;
    println!("{name}: stopped (pid {pid})");
    Ok(())
}

/// Polls until `pid` is gone; `false` if it is still alive after `timeout`.
fn wait_gone(pid: u32, name: &str, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while process_alive(pid, name) {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL_INTERVAL);
    }
    true
}

/// `cargo xtask stack status`: one line per known server (cluster members
/// only when one of them has a state dir, i.e. was ever started), then one
/// per running Redis set (the cluster's state, the Sentinel sets' primaries).
fn status() -> Result<()> {
    let members = cluster::members().filter(|&member| StateDir::of(member).dir.exists());
    for server in SERVERS.iter().copied().chain(members) {
        let name = server.name();
        match state(server)? {
            State::Running { pid, port } => println!(
                "{name}: running (pid {pid}) at {}  [{}]",
                server.url(port),
                server.url_env()
            ),
            State::Unresponsive { pid, port } => println!(
                "{name}: not answering (pid {pid}, port {port}); log: {}",
                StateDir::of(server).logfile.display()
            ),
            State::Stale { .. } => println!("{name}: stopped (stale pidfile)"),
            State::Stopped => println!("{name}: stopped"),
        }
    }
    // The sets as a whole: the Redis Cluster's state, the Sentinel sets' current primaries.
    for line in [
        redis_cluster::status_line()?,
        redis_sentinel::status_line()?,
        redis_secure::status_line()?,
    ]
    .into_iter()
    .flatten()
    {
        println!("{line}");
    }
    println!("{}", chromium::status_line());
    Ok(())
}

/// `(KEY, value)` for each running server: its URL env var (e.g.
/// `LOCK_TEST_REDIS_URL`) pointing at the port it actually listens on; for a
/// cluster (e.g. `LOCK_TEST_ETCD_CLUSTER_URL`) its running members; and, while Chromium and
/// its driver are installed, where they are (`LOCK_TEST_CHROMEDRIVER`, `LOCK_TEST_CHROMIUM`).
pub(crate) fn env_vars() -> Result<Vec<(&'static str, String)>> {
    let mut vars: Vec<(&'static str, String)> = Vec::new();
    for server in SERVERS.iter().copied().chain(cluster::members()) {
        if let State::Running { port, .. } = state(server)? {
            // Cluster members share one variable: every running member, comma-separated.
            let url = server.url(port);
            match vars.iter_mut().find(|(key, _)| *key == server.url_env()) {
                Some((_, urls)) => {
                    urls.push(',');
                    urls.push_str(&url);
                }
                None => vars.push((server.url_env(), url)),
            }
            for (key, value) in server.extra_env() {
                // A set's members may share extra variables too (the Sentinel service name).
                if !vars.iter().any(|(known, _)| *known == key) {
                    vars.push((key, value));
                }
            }
        }
    }
    vars.extend(chromium::env_vars());
    Ok(vars)
}

/// Rewrites `target/stack/env` from the running servers (and Chromium, when installed);
/// removes it when it would be empty, so a stale file never points tools at a dead server.
fn write_env_file() -> Result<()> {
    let path = env_file();
    let vars = env_vars()?;
    if vars.is_empty() {
        return remove_if_exists(&path);
    }
    let text: String = vars
        .iter()
        .map(|(key, value)| format!("{key}={}\n", shell_quoted(value)))
        .collect();
    fs::create_dir_all(stack_dir())
        .and_then(|()| fs::write(&path, text))
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))
}

/// `value` as a shell word: as it is when it has nothing a shell reads specially (every URL
/// but the TLS ones), else in single quotes (a TLS database URL's query has `&` and `?`), so
/// `. target/stack/env` and a pasted `export` line set exactly `value`.
fn shell_quoted(value: &str) -> String {
    let plain = value
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || b"-_./:@,=+%".contains(&byte));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// Prints the env vars of the running servers, ready to paste into a shell.
fn print_env() -> Result<()> {
    let vars = env_vars()?;
    if vars.is_empty() {
        return Ok(());
    }
    println!("\nEnvironment (also written to {}):", env_file().display());
    for (key, value) in vars {
        println!("  export {key}={}", shell_quoted(&value));
    }
    Ok(())
}

/// The last [`LOG_TAIL_LINES`] lines of `logfile`, for error messages.
fn log_tail(logfile: &Path) -> String {
    match fs::read_to_string(logfile) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            format!(
                "--- last {} lines of {} ---\n{}",
                tail.len(),
                logfile.display(),
                tail.join("\n")
            )
        }
        Err(err) => format!("(no log at {}: {err})", logfile.display()),
    }
}

/// Removes `path`; a file that is already gone is fine.
fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::failed(format!(
            "cannot remove {}: {err}",
            path.display()
        ))),
    }
}
