//! MySQL (MariaDB): `mariadbd` on 127.0.0.1:23306 (not 3306, so a system
//! server can keep running), a throwaway data dir under
//! `target/stack/mysql/data` made by `mariadb-install-db`, its socket and
//! pidfile in the state dir, no binary log, lazy flushing.
//!
//! `--no-defaults` everywhere, so the system's `/etc/mysql` configuration
//! (its data dir, port and socket) never applies. An init file creates the
//! `locks` database and lets `root` in over TCP from 127.0.0.1 without a
//! password; the server runs it before it accepts connections.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use super::{connect, Server, StateDir};
use crate::{cmd, Error, Result};

/// The stack's MySQL.
pub(crate) struct Mysql;

/// Default port: the well-known 3306 shifted by 20000.
const DEFAULT_PORT: u16 = 23306;

/// Runs at every start (idempotent).
const INIT_SQL: &str = "\
CREATE DATABASE IF NOT EXISTS locks;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
";

impl Server for Mysql {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn binary(&self) -> &'static str {
        "mariadbd"
    }

    fn apt_package(&self) -> &'static str {
        "mariadb-server"
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_MYSQL_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_MYSQL_URL"
    }

    fn url(&self, port: u16) -> String {
        format!("mysql://root@127.0.0.1:{port}/locks")
    }

    fn locate(&self) -> Option<std::path::PathBuf> {
        // Debian puts it in /usr/sbin, which is not on every user's PATH.
        cmd::which("mariadbd").or_else(|| {
            let sbin = Path::new("/usr/sbin/mariadbd");
            sbin.is_file().then(|| sbin.to_path_buf())
        })
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        launch(program, state, port, INIT_SQL, &[])
    }

    fn ping(&self, port: u16) -> bool {
        greets(port)
    }
}

/// Whether a server on `port` sends the greeting of a server ready for logins.
pub(super) fn greets(port: u16) -> bool {
    let Some(mut stream) = connect(port) else {
        return false;
    };
    // A ready server greets first: a packet header (3-byte length,
    // sequence 0) and protocol version 10. An error packet (0xff) means
    // it refuses us.
    let mut greeting = [0_u8; 5];
    stream.read_exact(&mut greeting).is_ok() && greeting[3] == 0 && greeting[4] == 10
}

/// Starts a server on the data dir `state.dir/data` (made first when missing) on
/// 127.0.0.1:`port` in the background, with the stack's options and then `options`, running
/// `init_sql` before it accepts connections.
pub(super) fn launch(
    program: &Path,
    state: &StateDir,
    port: u16,
    init_sql: &str,
    options: &[String],
) -> Result<()> {
    let data = state.dir.join("data");
    let root = cmd::is_root();
    if !data.join("mysql").is_dir() {
        install_db(program, &data, root)?;
    }
    let init = state.dir.join("init.sql");
    fs::write(&init, init_sql)
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", init.display())))?;
    let mut server = cmd::command(program, ["--no-defaults"]);
    server
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!(
            "--socket={}",
            state.dir.join("mysqld.sock").display()
        ))
        .arg(format!("--pid-file={}", state.pidfile.display()))
        .arg(format!("--log-error={}", state.logfile.display()))
        .arg(format!("--init-file={}", init.display()))
        .args([
            "--max-connections=500",
            "--innodb-buffer-pool-size=64M",
            "--innodb-flush-log-at-trx-commit=0",
            "--skip-log-bin",
            "--skip-name-resolve",
        ])
        .args(options);
    if root {
        server.arg("--user=root");
    }
    // Its own process group, so a Ctrl-C meant for xtask does not stop
    // the server; it runs in the state dir, which is how `down`
    // recognizes it as ours. It writes its own pidfile.
    {
        use std::os::unix::process::CommandExt;
        server.process_group(0);
    }
    server
        .current_dir(&state.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd::echo(&server);
    server
        .spawn()
        .map(drop)
        .map_err(|err| Error::failed(format!("could not start {}: {err}", program.display())))
}

/// Creates the system tables in `data` with `mariadb-install-db`.
fn install_db(program: &Path, data: &Path, root: bool) -> Result<()> {
    let installer = cmd::which("mariadb-install-db")
        .or_else(|| cmd::which("mysql_install_db"))
        .ok_or_else(|| {
            Error::failed("`mariadb-install-db` not found; install the mariadb-server package")
        })?;
    fs::create_dir_all(data)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", data.display())))?;
    let mut install = cmd::command(installer, ["--no-defaults"]);
    install
        .arg(format!("--datadir={}", data.display()))
        .arg(format!(
            "--basedir={}",
            program
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("/usr"))
                .display()
        ))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .stdout(Stdio::null());
    if root {
        install.arg("--user=root");
    }
    cmd::run(&mut install)
}
