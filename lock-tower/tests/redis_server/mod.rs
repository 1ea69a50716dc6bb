//! A `redis-server` of a test's own, on a free loopback port, that the test may kill and
//! start again (restart and outage tests).

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Server {
    port: u16,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

impl Server {
    pub fn start(port: u16, dir: std::path::PathBuf) -> Self {
        let mut server = Self {
            port,
            dir,
            child: None,
        };
        server.spawn();
        server
    }

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
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
