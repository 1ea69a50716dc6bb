//! ZooKeeper: Debian's `zookeeperd` jars run as a standalone `QuorumPeerMain` on
//! 127.0.0.1:22181 (not 2181) with a generated `zoo.cfg` and data under
//! `target/stack/zookeeper/`. No systemd, no wrapper script: it is ready in a
//! few seconds.

use std::path::{Path, PathBuf};

use super::{ask, spawn_detached, Server, StateDir};
use crate::cmd;
use crate::{Error, Result};

/// The stack's ZooKeeper.
pub(crate) struct ZooKeeper;

/// Default port: the well-known 2181 shifted by 20000.
const DEFAULT_PORT: u16 = 22181;

/// The server jar `zookeeperd` installs; its manifest's `Class-Path` names
/// every dependency, so it is the whole classpath.
const JAR: &str = "/usr/share/java/zookeeper.jar";

/// A logging backend for the server's slf4j, when installed (otherwise it
/// logs nothing and a failed start has no log tail to show).
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";

impl Server for ZooKeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn binary(&self) -> &'static str {
        "java"
    }

    fn apt_package(&self) -> &'static str {
        "zookeeperd"
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_ZOOKEEPER_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_ZOOKEEPER_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("127.0.0.1:{port}")
    }

    /// `java` alone is not enough: the server is the jar `zookeeperd` installs.
    fn locate(&self) -> Option<PathBuf> {
        Path::new(JAR)
            .exists()
            .then(|| cmd::which("java"))
            .flatten()
    }

    fn process_name(&self) -> &'static str {
        "java"
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let config = state.dir.join("zoo.cfg");
        std::fs::write(&config, zoo_cfg(&state.dir.join("data"), port))
            .map_err(|err| Error::failed(format!("cannot write {}: {err}", config.display())))?;
        spawn_detached(java(program, &config), state)
    }

    fn ping(&self, port: u16) -> bool {
        answers_ruok(port)
    }
}

/// Whether the server on `port` answers the `ruok` four-letter word (allowed
/// in zoo.cfg) with `imok`: it runs, with or without a quorum.
pub(super) fn answers_ruok(port: u16) -> bool {
    ask(port, b"ruok").is_some_and(|reply| reply == "imok")
}

/// The server's command line: `QuorumPeerMain` with the configuration `config` (also used
/// for the members of `stack up --zk-ensemble`).
pub(super) fn java(program: &Path, config: &Path) -> std::process::Command {
    java_with(program, config, &[], &[])
}

/// [`java`] with `jars` added to the class path and the system `properties` (`-Dname=value`).
pub(super) fn java_with(
    program: &Path,
    config: &Path,
    jars: &[&str],
    properties: &[String],
) -> std::process::Command {
    let mut classpath = JAR.to_owned();
    let slf4j = Path::new(SLF4J_SIMPLE).exists().then_some(SLF4J_SIMPLE);
    for jar in slf4j.iter().chain(jars) {
        classpath.push(':');
        classpath.push_str(jar);
    }
    let mut java = cmd::command(program, ["-Xmx256m", "-XX:+UseSerialGC"]);
    java.args(properties);
    java.args([
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dzookeeper.admin.enableServer=false",
        "-cp",
        &classpath,
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
    ]);
    java.arg(config);
    java
}

/// A standalone server's configuration (an ensemble member appends its `server.N` lines). `tickTime=1000` lets clients ask
/// for sessions of 2-20 s (the tests use short ones); the admin HTTP server
/// (port 8080) is off; `maxClientCnxns=0` lifts the per-IP limit of 60,
/// which the test suites and stress processes on 127.0.0.1 would exceed.
pub(super) fn zoo_cfg(data: &Path, port: u16) -> String {
    format!(
        "tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\n\
         clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
         4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n",
        data.display()
    )
}
