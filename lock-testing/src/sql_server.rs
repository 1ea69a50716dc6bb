//! A PostgreSQL or MariaDB server of a test's own, for crash and restart tests: the stack's
//! servers are shared by every test running at once, so a test that takes its database down
//! brings up one of its own.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which database a [`SqlServer`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlKind {
    /// PostgreSQL (`initdb` and `postgres` from `/usr/lib/postgresql/<version>/bin`).
    Postgres,
    /// MariaDB (`mariadb-install-db` and `mariadbd`).
    MariaDb,
}

/// A database server child process on a loopback port with its data in a directory of its
/// own, which the test may crash and start again (the data stays). Killed when dropped. Needs
/// the server installed (`cargo xtask test` installs both); as root, PostgreSQL runs as the
/// `postgres` user its package creates.
///
/// ```no_run
/// use lock_testing::{free_port, SqlKind, SqlServer};
///
/// let dir = std::env::temp_dir().join("restart-test");
/// let mut server = SqlServer::start(SqlKind::Postgres, free_port(), dir);
/// let url = server.url(); // postgres://postgres@127.0.0.1:<port>/postgres
/// server.crash(); // no shutdown: what is committed must survive it
/// server.spawn(); // back on the same port and data, after crash recovery
/// # let _ = url;
/// ```
#[derive(Debug)]
pub struct SqlServer {
    kind: SqlKind,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// MariaDB's init file: the `locks` database, `root` over TCP without a password.
const MARIADB_INIT: &str = "\
CREATE DATABASE IF NOT EXISTS locks;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
";

impl SqlServer {
    /// Creates the data directory under `dir` (if missing), starts the server on `port` and
    /// waits until it accepts sessions.
    ///
    /// # Panics
    /// When the server cannot be set up or does not come up within 60 s.
    #[must_use]
    pub fn start(kind: SqlKind, port: u16, dir: PathBuf) -> Self {
        let mut server = Self {
            kind,
            port,
            dir,
            child: None,
        };
        std::fs::create_dir_all(&server.dir).unwrap();
        match kind {
            SqlKind::Postgres => server.init_postgres(),
            SqlKind::MariaDb => server.init_mariadb(),
        }
        server.spawn();
        server
    }

    /// The server's URL.
    #[must_use]
    pub fn url(&self) -> String {
        match self.kind {
            SqlKind::Postgres => format!("postgres://postgres@127.0.0.1:{}/postgres", self.port),
            SqlKind::MariaDb => format!("mysql://root@127.0.0.1:{}/locks", self.port),
        }
    }

    /// Starts the server again (after [`crash`](Self::crash)) on the same port and data, and
    /// waits until it accepts sessions (crash recovery done).
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn spawn(&mut self) {
        let data = self.dir.join("data");
        let mut command = match self.kind {
            SqlKind::Postgres => {
                let mut command = Command::new(postgres_bin("postgres"));
                command
                    .arg("-D")
                    .arg(&data)
                    .args(["-p", &self.port.to_string()]);
                for setting in [
                    "listen_addresses=127.0.0.1",
                    "unix_socket_directories=",
                    "max_connections=200",
                    "fsync=off",
                ] {
                    command.args(["-c", setting]);
                }
                if let Some((uid, gid)) = postgres_owner() {
                    command.uid(uid).gid(gid);
                }
                command
            }
            SqlKind::MariaDb => {
                let init = self.dir.join("init.sql");
                std::fs::write(&init, MARIADB_INIT).unwrap();
                let mut command = Command::new(mariadbd());
                command
                    .arg("--no-defaults")
                    .arg(format!("--datadir={}", data.display()))
                    .arg(format!("--port={}", self.port))
                    .arg("--bind-address=127.0.0.1")
                    .arg(format!(
                        "--socket={}",
                        self.dir.join("mysqld.sock").display()
                    ))
                    .arg(format!(
                        "--pid-file={}",
                        self.dir.join("mysqld.pid").display()
                    ))
                    .arg(format!(
                        "--log-error={}",
                        self.dir.join("mysqld.log").display()
                    ))
                    .arg(format!("--init-file={}", init.display()))
                    .args([
                        "--skip-log-bin",
                        "--skip-name-resolve",
                        "--max-connections=300",
                    ])
                    .args(["--innodb-buffer-pool-size=32M", "--user=root"]);
                command
            }
        };
        let log = std::fs::File::create(self.dir.join("server.log")).unwrap();
        let child = command
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {:?} server: {e}", self.kind));
        self.child = Some(child);
        let started = Instant::now();
        while !self.ready() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the {:?} server did not come up; see {}",
                self.kind,
                self.dir.join("server.log").display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Crashes the server: no shutdown, nothing flushed beyond what each commit wrote
    /// (PostgreSQL's immediate shutdown, which leaves crash recovery to the next start;
    /// MariaDB killed with `SIGKILL`). Waits for it to exit.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let signal = match self.kind {
                SqlKind::Postgres => "-QUIT",
                SqlKind::MariaDb => "-KILL",
            };
            Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .ok();
            child.wait().ok();
        }
    }

    /// Whether the server answers a session's opening (PostgreSQL: trust authentication
    /// accepted, so not in recovery; MariaDB: its greeting).
    fn ready(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok();
        match self.kind {
            SqlKind::Postgres => {
                let mut body = Vec::new();
                body.extend_from_slice(&196_608_u32.to_be_bytes()); // protocol 3.0
                for part in ["user", "postgres", "database", "postgres", ""] {
                    body.extend_from_slice(part.as_bytes());
                    body.push(0);
                }
                let length = u32::try_from(body.len() + 4).unwrap_or(u32::MAX);
                let mut message = length.to_be_bytes().to_vec();
                message.extend_from_slice(&body);
                let mut reply = [0_u8; 9];
                let ok = stream.write_all(&message).is_ok()
                    && stream.read_exact(&mut reply).is_ok()
                    && reply == [b'R', 0, 0, 0, 8, 0, 0, 0, 0];
                stream.write_all(&[b'X', 0, 0, 0, 4]).ok();
                ok
            }
            SqlKind::MariaDb => {
                let mut greeting = [0_u8; 5];
                stream.read_exact(&mut greeting).is_ok() && greeting[3] == 0 && greeting[4] == 10
            }
        }
    }

    fn init_postgres(&self) {
        let data = self.dir.join("data");
        if data.join("PG_VERSION").exists() {
            return;
        }
        std::fs::create_dir_all(&data).unwrap();
        let mut initdb = Command::new(postgres_bin("initdb"));
        if let Some((uid, gid)) = postgres_owner() {
            std::os::unix::fs::chown(&self.dir, Some(uid), Some(gid)).unwrap();
            std::os::unix::fs::chown(&data, Some(uid), Some(gid)).unwrap();
            initdb.uid(uid).gid(gid);
        }
        let status = initdb
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .args(["--no-sync", "--no-instructions"])
            .stdout(Stdio::null())
            .status()
            .expect("initdb must be installed (cargo xtask test installs postgresql)");
        assert!(status.success(), "initdb failed");
    }

    fn init_mariadb(&self) {
        let data = self.dir.join("data");
        if data.join("mysql").is_dir() {
            return;
        }
        let installer = ["/usr/bin/mariadb-install-db", "/usr/bin/mysql_install_db"]
            .into_iter()
            .find(|path| Path::new(path).is_file())
            .expect("mariadb-install-db must be installed (cargo xtask test installs it)");
        let status = Command::new(installer)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .args(["--basedir=/usr", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--user=root"])
            .stdout(Stdio::null())
            .status()
            .expect("mariadb-install-db runs");
        assert!(status.success(), "mariadb-install-db failed");
    }
}

impl Drop for SqlServer {
    fn drop(&mut self) {
        self.crash();
    }
}

/// `name` from the newest PostgreSQL under `/usr/lib/postgresql`, else from `PATH`.
fn postgres_bin(name: &str) -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin").join(name);
            bin.is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map_or_else(|| PathBuf::from(name), |(_, bin)| bin)
}

fn mariadbd() -> PathBuf {
    ["/usr/sbin/mariadbd", "/usr/bin/mariadbd"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("mariadbd"))
}

/// As root, the `postgres` user's ids (PostgreSQL refuses to run as root); `None` otherwise.
fn postgres_owner() -> Option<(u32, u32)> {
    let me = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let fields: Vec<&str> = passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&"postgres"))?;
    Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?))
}
