//! PostgreSQL: `postgres` on 127.0.0.1:25432 (not 5432, so a system
//! cluster can keep running), a throwaway cluster under
//! `target/stack/postgres/data` made by `initdb` with trust auth for the
//! `postgres` user, no Unix socket, no fsync.
//!
//! Debian keeps the binaries off PATH, in `/usr/lib/postgresql/<ver>/bin`;
//! the newest installed version is used. PostgreSQL refuses to run as root,
//! so as root the cluster belongs to, and the server runs as, the
//! `postgres` system user (the package creates it).

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{connect, Server, StateDir};
use crate::{cmd, Error, Result};

/// The stack's PostgreSQL.
pub(crate) struct Postgres;

/// Default port: the well-known 5432 shifted by 20000.
const DEFAULT_PORT: u16 = 25432;

/// The system user the server runs as when xtask runs as root.
const SERVICE_USER: &str = "postgres";

impl Server for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn binary(&self) -> &'static str {
        "postgres"
    }

    fn apt_package(&self) -> &'static str {
        "postgresql"
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_POSTGRES_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_POSTGRES_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }

    fn locate(&self) -> Option<PathBuf> {
        newest_versioned_bin("postgres").or_else(|| cmd::which("postgres"))
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let owner = service_owner()?;
        let data = state.dir.join("data");
        if !data.join("PG_VERSION").exists() {
            init_cluster(program, &data, owner, None)?;
        }
        launch(program, state, port, owner, &[])
    }

    fn ping(&self, port: u16) -> bool {
        let Some(mut stream) = connect(port) else {
            return false;
        };
        // A v3 StartupMessage for user/database `postgres`; a ready server
        // with trust auth answers AuthenticationOk ('R', length 8, code 0).
        // While starting up or shutting down it answers an ErrorResponse.
        let mut body = Vec::new();
        body.extend_from_slice(&196_608_u32.to_be_bytes()); // protocol 3.0
        for part in ["user", "postgres", "database", "postgres", ""] {
            body.extend_from_slice(part.as_bytes());
            body.push(0);
        }
        let mut message = u32::try_from(body.len() + 4)
            .unwrap_or(u32::MAX)
            .to_be_bytes()
            .to_vec();
        message.extend_from_slice(&body);
        if stream.write_all(&message).is_err() {
            return false;
        }
        let mut reply = [0_u8; 9];
        let ok = stream.read_exact(&mut reply).is_ok() && reply == [b'R', 0, 0, 0, 8, 0, 0, 0, 0];
        // Terminate ('X'), so the server does not log a dropped connection.
        stream.write_all(&[b'X', 0, 0, 0, 4]).ok();
        ok
    }
}

/// The uid and gid the cluster belongs to and the server runs as: the `postgres` system user
/// when xtask runs as root (PostgreSQL refuses to run as root), else none (xtask's own).
pub(super) fn service_owner() -> Result<Option<(u32, u32)>> {
    if cmd::is_root() {
        user_ids(SERVICE_USER).map(Some)
    } else {
        Ok(None)
    }
}

/// Starts the server of the cluster in `state.dir/data` on 127.0.0.1:`port` as `owner`, in
/// the background, with the stack's settings and then `settings` (`name=value`).
pub(super) fn launch(
    program: &Path,
    state: &StateDir,
    port: u16,
    owner: Option<(u32, u32)>,
    settings: &[String],
) -> Result<()> {
    let data = state.dir.join("data");
    let log = fs::File::create(&state.logfile).map_err(|err| {
        Error::failed(format!("cannot create {}: {err}", state.logfile.display()))
    })?;
    let log_err = log
        .try_clone()
        .map_err(|err| Error::failed(format!("cannot share the log file: {err}")))?;
    let mut server = cmd::command(program, ["-D"]);
    server.arg(&data).args(["-p", &port.to_string()]);
    // Throwaway data: durability off. No Unix socket (its default
    // directory belongs to the system cluster).
    for setting in [
        "listen_addresses=127.0.0.1",
        "unix_socket_directories=",
        "max_connections=300",
        "fsync=off",
        "synchronous_commit=off",
        "full_page_writes=off",
    ] {
        server.args(["-c", setting]);
    }
    for setting in settings {
        server.arg("-c").arg(setting);
    }
    // Its own process group, so a Ctrl-C meant for xtask does not stop
    // the server; it chdirs into the data dir, which is how `down`
    // recognizes it as ours.
    server
        .current_dir(&state.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    if let Some((uid, gid)) = owner {
        server.uid(uid).gid(gid);
    }
    cmd::echo(&server);
    let child = server
        .spawn()
        .map_err(|err| Error::failed(format!("could not start {}: {err}", program.display())))?;
    // The postmaster writes data/postmaster.pid in its own multi-line
    // format; the stack's pidfile holds just the pid.
    fs::write(&state.pidfile, format!("{}\n", child.id()))
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", state.pidfile.display())))
}

/// Runs `initdb` for a trust-auth cluster at `data`, as `owner` if given; with `password_file`,
/// the `postgres` user's password is the first line of that file.
pub(super) fn init_cluster(
    program: &Path,
    data: &Path,
    owner: Option<(u32, u32)>,
    password_file: Option<&Path>,
) -> Result<()> {
    let initdb = program.with_file_name("initdb");
    fs::create_dir_all(data)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", data.display())))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(data, Some(uid), Some(gid)).map_err(|err| {
            Error::failed(format!(
                "cannot hand {} to {SERVICE_USER}: {err}",
                data.display()
            ))
        })?;
    }
    let mut init = cmd::command(&initdb, ["-D"]);
    init.arg(data).args([
        "-U",
        "postgres",
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
    ]);
    if let Some(file) = password_file {
        init.arg("--pwfile").arg(file);
    }
    if let Some((uid, gid)) = owner {
        init.uid(uid).gid(gid);
    }
    cmd::run(&mut init)
}

/// `/usr/lib/postgresql/<newest version>/bin/<name>`, where Debian puts
/// the server binaries.
pub(super) fn newest_versioned_bin(name: &str) -> Option<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir(root)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin").join(name);
            bin.is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Uid and gid of `user`, from `/etc/passwd`.
fn user_ids(user: &str) -> Result<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd")
        .map_err(|err| Error::failed(format!("cannot read /etc/passwd: {err}")))?;
    passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&user))
        .and_then(|fields| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))
        .ok_or_else(|| {
            Error::failed(format!(
                "PostgreSQL will not run as root, and there is no `{user}` user to run it as \
                 (the postgresql package creates it)"
            ))
        })
}
