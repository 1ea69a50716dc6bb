//! A `redis-server` of a test's own, on a free loopback port with data under `target/`, that
//! the test may kill and restart. Append-only with fsync on every write, so a restart keeps
//! every acknowledged write (as a production deployment that cares about stock would).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server; killed on drop.
#[derive(Debug)]
pub struct TestRedis {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl TestRedis {
    /// Starts a server with its data in `dir` (created if missing).
    pub fn start(dir: PathBuf) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut server = Self {
            port,
            dir,
            child: None,
        };
        server.restart()?;
        Ok(server)
    }

    /// `redis://127.0.0.1:port/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server at once (SIGKILL: no shutdown, no final save).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    /// Starts the server again on the same port and data, waiting until it accepts
    /// connections (at most 10 s).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("redis-server must be installed (cargo xtask stack up installs it): {e}")
            })?;
        self.child = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                return Err("redis-server did not start within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
