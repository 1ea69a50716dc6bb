//! Command-line parsing, hand-written to keep xtask dependency-free.
//!
//! Only `stack` has flags of its own. `test`, `demo`, `stress` and `bench`
//! forward everything after the command name untouched, so their own
//! `--help` and flags keep working through xtask.

use std::ffi::OsString;

use crate::stack::{self, Server};
use crate::{Error, Result};

/// What the user asked for.
pub(crate) enum Task {
    /// `help`, `-h`, `--help`: print usage and exit 0.
    Help,
    /// `stack up|down|status`.
    Stack(StackCmd),
    /// `test [cargo test args...]`.
    Test {
        /// Extra arguments appended to `cargo test` (e.g. `-- --nocapture`).
        cargo_args: Vec<String>,
    },
    /// `ci` (takes no arguments).
    Ci,
    /// `demo|stress|bench|chaos [args...]`: run a harness binary.
    Harness {
        /// Which binary of `lock-harness`.
        bin: HarnessBin,
        /// Arguments for the binary itself (after cargo's `--`).
        args: Vec<String>,
    },
}

/// Subcommands of `stack`.
pub(crate) enum StackCmd {
    /// Start the selected servers unless they already run (and install Chromium, if named).
    Up(Selection),
    /// Stop the selected servers, if (and only if) `stack up` started them.
    Down(Selection),
    /// Report every known server.
    Status,
}

/// What `--with` and the set flags named.
pub(crate) struct Selection {
    /// The servers, each once, in the order first named.
    pub(crate) servers: Vec<&'static dyn Server>,
    /// `chromium`: a tool to install, not a server (nothing runs, no port).
    pub(crate) chromium: bool,
}

/// The binaries of `xtask/harness` (package `lock-harness`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HarnessBin {
    /// Interactive walkthrough; needs no servers by default.
    Demo,
    /// Contention/fault stress run.
    Stress,
    /// Throughput/latency benchmark.
    Bench,
    /// The fault catalogue against the backends.
    Chaos,
}

impl HarnessBin {
    /// The `[[bin]]` name in the harness's Cargo.toml.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Demo => "demo",
            Self::Stress => "stress",
            Self::Bench => "bench",
            Self::Chaos => "chaos",
        }
    }
}

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl Iterator<Item = OsString>) -> Result<Task> {
    // Convert up front: every argument we look at or forward is expected to
    // be UTF-8, and a clear error beats a lossy conversion of a path.
    let args = args
        .map(|arg| {
            arg.into_string()
                .map_err(|raw| Error::usage(format!("argument is not valid UTF-8: {raw:?}")))
        })
        .collect::<Result<Vec<String>>>()?;
    let mut args = args.into_iter();

    let Some(command) = args.next() else {
        return Err(Error::usage("no command given"));
    };
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "help" | "-h" | "--help" => Ok(Task::Help),
        "stack" => parse_stack(rest),
        "test" => Ok(Task::Test { cargo_args: rest }),
        "ci" => {
            if let Some(arg) = rest.first() {
                if is_help(arg) {
                    return Ok(Task::Help);
                }
                return Err(Error::usage(format!(
                    "`ci` takes no arguments, got `{arg}`"
                )));
            }
            Ok(Task::Ci)
        }
        "demo" => Ok(harness(HarnessBin::Demo, rest)),
        "stress" => Ok(harness(HarnessBin::Stress, rest)),
        "bench" => Ok(harness(HarnessBin::Bench, rest)),
        "chaos" => Ok(harness(HarnessBin::Chaos, rest)),
        other if other.starts_with('-') => Err(Error::usage(format!("unknown flag `{other}`"))),
        other => Err(Error::usage(format!("unknown command `{other}`"))),
    }
}

/// Builds a harness task. A single leading `--` is dropped because cargo
/// already inserts one: `cargo xtask stress -- --backend redis` would
/// otherwise hand the binary a literal `--` as its first argument.
fn harness(bin: HarnessBin, mut args: Vec<String>) -> Task {
    if args.first().is_some_and(|arg| arg == "--") {
        args.remove(0);
    }
    Task::Harness { bin, args }
}

/// Whether `arg` asks for help.
fn is_help(arg: &str) -> bool {
    matches!(arg, "-h" | "--help" | "help")
}

/// Parses `stack <up|down|status> [--with ...]`.
fn parse_stack(args: Vec<String>) -> Result<Task> {
    let mut args = args.into_iter();
    let Some(sub) = args.next() else {
        return Err(Error::usage(
            "`stack` needs a subcommand: up, down or status",
        ));
    };
    let rest: Vec<String> = args.collect();
    // `stack up --help` must show help, not an "unknown argument" error.
    if is_help(&sub) || rest.iter().any(|arg| arg == "-h" || arg == "--help") {
        return Ok(Task::Help);
    }
    let cmd = match sub.as_str() {
        "up" => StackCmd::Up(parse_with(rest)?),
        "down" => StackCmd::Down(parse_with(rest)?),
        "status" => {
            if let Some(arg) = rest.first() {
                return Err(Error::usage(format!(
                    "`stack status` takes no arguments, got `{arg}`"
                )));
            }
            StackCmd::Status
        }
        other => {
            return Err(Error::usage(format!(
                "unknown stack subcommand `{other}` (expected up, down or status)"
            )))
        }
    };
    Ok(Task::Stack(cmd))
}

/// Parses the flags of `stack up`/`stack down`: `--with a,b`, `--with=a,b`,
/// repeatable, `all` for every server; `--zk-ensemble` / `--etcd-cluster` for
/// the 3 members of a cluster, `--redlock` for RedLock's 5 nodes, `--redis-cluster` for the
/// Redis Cluster's 6 nodes, `--redis-sentinel` for the Sentinel set's 6 processes,
/// `--redis-secure` for the secure (TLS, ACL, AOF) set's 3 (with `--with`: in addition;
/// `--with redlock`, `--with redis-cluster`, `--with redis-sentinel` and `--with redis-secure`
/// name the same sets). No flag means all single servers. Each server is listed once, in
/// the order first named. `chromium` (not a server: Chromium and its WebDriver, for the browser
/// test) is named only by `--with chromium`; `all` means the servers.
fn parse_with(args: Vec<String>) -> Result<Selection> {
    let mut args = args.into_iter();
    let mut chromium = false;
    let mut names: Vec<String> = Vec::new();
    let mut clusters: Vec<&'static dyn Server> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--zk-ensemble" => clusters.extend_from_slice(stack::ZK_ENSEMBLE),
            "--etcd-cluster" => clusters.extend_from_slice(stack::ETCD_CLUSTER),
            "--redlock" => clusters.extend_from_slice(stack::REDLOCK_NODES),
            "--redis-cluster" => clusters.extend_from_slice(stack::REDIS_CLUSTER),
            "--redis-sentinel" => clusters.extend_from_slice(stack::SENTINEL_SET),
            "--redis-secure" => clusters.extend_from_slice(stack::SECURE_SET),
            "--with" => names.push(
                args.next()
                    .ok_or_else(|| Error::usage("`--with` needs a value, e.g. `--with redis`"))?,
            ),
            _ => match arg.strip_prefix("--with=") {
                Some(value) => names.push(value.to_owned()),
                None => {
                    return Err(Error::usage(format!(
                        "unknown argument `{arg}` for `stack`"
                    )))
                }
            },
        }
    }
    if names.is_empty() && clusters.is_empty() {
        names.push("all".to_owned());
    }

    let mut selected: Vec<&'static dyn Server> = Vec::new();
    for name in names
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
    {
        if name == "all" {
            selected.extend_from_slice(stack::SERVERS);
            continue;
        }
        if name.is_empty() {
            return Err(Error::usage("empty server name in `--with`"));
        }
        if name == stack::CHROMIUM {
            chromium = true;
            continue;
        }
        // A set's name stands for its members (`--with redis-cluster`, as `--redis-cluster`).
        let servers = stack::for_backend(name);
        if servers.is_empty() {
            return Err(Error::usage(format!(
                "unknown server `{name}` in `--with` (known: {}, redlock, redis-cluster, \
                 redis-sentinel, redis-secure, chromium, all)",
                stack::known_names()
            )));
        }
        selected.extend(servers);
    }
    selected.extend(clusters);
    // Keep the first occurrence only: `--with redis,redis` must not try to
    // start the same server twice.
    let mut unique: Vec<&'static dyn Server> = Vec::new();
    for server in selected {
        if !unique.iter().any(|s| s.name() == server.name()) {
            unique.push(server);
        }
    }
    Ok(Selection {
        servers: unique,
        chromium,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_with;

    fn names(args: &[&str]) -> Vec<&'static str> {
        let selection = parse_with(args.iter().map(|&a| a.to_owned()).collect())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let mut names: Vec<&'static str> = selection
            .servers
            .iter()
            .map(|server| server.name())
            .collect();
        if selection.chromium {
            names.push("chromium");
        }
        names
    }

    #[test]
    fn chromium_is_a_tool_named_only_by_with() {
        assert_eq!(names(&["--with", "chromium"]), ["chromium"]);
        assert_eq!(names(&["--with", "redis,chromium"]), ["redis", "chromium"]);
        assert!(!names(&[]).contains(&"chromium"));
        assert!(!names(&["--with", "all"]).contains(&"chromium"));
    }

    #[test]
    fn no_flag_means_every_single_server() {
        assert_eq!(
            names(&[]),
            [
                "redis",
                "redis-tls",
                "zookeeper",
                "zookeeper-tls",
                "etcd",
                "etcd-tls",
                "postgres",
                "postgres-tls",
                "mysql",
                "mysql-tls"
            ]
        );
    }

    #[test]
    fn with_lists_each_server_once_in_order() {
        assert_eq!(
            names(&["--with", "etcd,redis", "--with=redis"]),
            ["etcd", "redis"]
        );
        assert_eq!(names(&["--with", "redis,all"]).len(), 10);
    }

    #[test]
    fn cluster_flags_alone_or_in_addition() {
        assert_eq!(names(&["--etcd-cluster"]), ["etcd-1", "etcd-2", "etcd-3"]);
        assert_eq!(
            names(&["--zk-ensemble", "--with", "redis"]),
            ["redis", "zookeeper-1", "zookeeper-2", "zookeeper-3"]
        );
        assert_eq!(names(&["--with", "zookeeper-2"]), ["zookeeper-2"]);
    }

    #[test]
    fn set_names_in_with_stand_for_their_members() {
        assert_eq!(
            names(&["--with", "redis-cluster"]),
            names(&["--redis-cluster"])
        );
        assert_eq!(
            names(&["--with=redis,redis-sentinel"]),
            names(&["--with", "redis", "--redis-sentinel"])
        );
        assert_eq!(names(&["--with", "redlock"]).len(), 5);
        assert!(parse_with(vec!["--with".into(), "memory".into()]).is_err());
    }

    #[test]
    fn redis_set_flags() {
        assert_eq!(
            names(&["--redis-cluster"]),
            [
                "redis-cluster-1",
                "redis-cluster-2",
                "redis-cluster-3",
                "redis-cluster-4",
                "redis-cluster-5",
                "redis-cluster-6"
            ]
        );
        assert_eq!(
            names(&["--redis-sentinel", "--with", "redis"]),
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
        assert_eq!(
            names(&["--redis-cluster", "--redis-sentinel", "--redlock"]).len(),
            17
        );
        assert_eq!(
            names(&["--redis-secure"]),
            [
                "redis-secure-primary",
                "redis-secure-replica",
                "redis-secure-sentinel"
            ]
        );
        assert_eq!(
            names(&["--with", "redis-secure"]),
            names(&["--redis-secure"])
        );
        assert_eq!(names(&["--with", "redis-cluster-2"]), ["redis-cluster-2"]);
        assert_eq!(
            names(&["--with", "redis-sentinel-replica-2,redis-sentinel-3"]),
            ["redis-sentinel-replica-2", "redis-sentinel-3"]
        );
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for args in [
            &["--with"][..],
            &["--with", "redis,"],
            &["--with", "nope"],
            &["--what"],
            &["--redis-clusters"],
            &["--with", "redis-cluster-7"],
        ] {
            let args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
            assert!(parse_with(args.clone()).is_err(), "{args:?} was accepted");
        }
    }
}
