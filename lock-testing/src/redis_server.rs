//! A `redis-server` of a test's own, for restart and outage tests.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child process on a loopback port, which the test may kill and start again.
/// Killed when dropped. Needs `redis-server` on `PATH` (`cargo xtask test` installs it); it
/// keeps nothing on disk (`--save ""`, no AOF) apart from its working directory.
///
/// ```no_run
/// use lock_testing::{free_port, RedisServer};
///
/// let mut server = RedisServer::start(free_port(), std::env::temp_dir().join("outage-test"));
/// let url = server.url(); // redis://127.0.0.1:<port>/
/// server.kill(); // the outage
/// server.spawn(); // back, empty, on the same port
/// # let _ = url;
/// ```
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on `port` (see [`free_port`]) working in `dir` (created if missing), and
    /// waits until it accepts connections.
    ///
    /// # Panics
    /// When `redis-server` cannot be run or does not accept connections within 10 s.
    #[must_use]
    pub fn start(port: u16, dir: PathBuf) -> Self {
        let mut server = Self {
            port,
            dir,
            child: None,
        };
        server.spawn();
        server
    }

    /// Starts the server again (after [`kill`](Self::kill)) on the same port, and waits until
    /// it accepts connections.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn spawn(&mut self) {
        std::fs::create_dir_all(&self.dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (cargo xtask test installs it)");
        self.child = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL: no shutdown, as in a crash) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    /// The server's process id while it runs (to pause it with SIGSTOP, say).
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's port, to check that an answer does not name it.
    ///
    /// ```no_run
    /// use lock_testing::{free_port, RedisServer};
    ///
    /// let port = free_port();
    /// let server = RedisServer::start(port, std::env::temp_dir().join("port-test"));
    /// assert_eq!(server.port(), port);
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's URL, `redis://127.0.0.1:<port>/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port free at the time of the call (the OS's choice), for a [`RedisServer`].
///
/// # Panics
/// When no port can be bound on 127.0.0.1.
#[must_use]
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
