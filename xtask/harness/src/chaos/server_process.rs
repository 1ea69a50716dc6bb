//! A lock server's processes, for scenario 2 (the server paused): the run's own redis-server,
//! or a stack server found by its pidfile (`target/stack/<name>/<name>.pid`, as `cargo xtask
//! stack up` writes it), with every process below it (PostgreSQL serves each connection from a
//! process of its own, and all of them must stop for the server to be paused).

use std::path::PathBuf;

use example_support::backend::BackendKind;

/// The processes of one server.
#[derive(Clone, Debug)]
pub struct ServerProcesses {
    pids: Vec<u32>,
}

impl ServerProcesses {
    /// `root` and every process below it.
    #[must_use]
    pub fn from_root(root: u32) -> Self {
        let mut pids = vec![root];
        let mut i = 0;
        while i < pids.len() {
            pids.extend(children_of(pids[i]));
            i += 1;
        }
        Self { pids }
    }

    /// Each of `roots` and every process below them.
    #[must_use]
    pub fn from_roots(roots: &[u32]) -> Self {
        Self {
            pids: roots
                .iter()
                .flat_map(|&root| Self::from_root(root).pids)
                .collect(),
        }
    }

    /// The stack server of `kind`, from its pidfile.
    pub fn of_stack_server(kind: BackendKind) -> Result<Self, String> {
        Self::of_stack_name(kind.name())
    }

    /// The stack server `name` (`target/stack/<name>/<name>.pid`).
    fn of_stack_name(name: &str) -> Result<Self, String> {
        let pidfile = stack_dir().join(name).join(format!("{name}.pid"));
        let text = std::fs::read_to_string(&pidfile)
            .map_err(|e| format!("{}: {e} (is the stack up?)", pidfile.display()))?;
        let pid: u32 = text
            .trim()
            .parse()
            .ok()
            .filter(|&pid| pid > 1)
            .ok_or_else(|| format!("{}: no pid in {text:?}", pidfile.display()))?;
        Ok(Self::from_root(pid))
    }

    /// The stack servers `names` (each from its pidfile), and every process below them.
    pub fn of_stack_servers(names: &[&str]) -> Result<Self, String> {
        let mut pids = Vec::new();
        for name in names {
            pids.extend(Self::of_stack_name(name)?.pids);
        }
        Ok(Self { pids })
    }

    /// How many processes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pids.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }

    /// Stops every process (SIGSTOP): the server holds its sockets and answers nothing.
    pub fn pause(&self) -> Result<(), String> {
        self.signal("STOP")
    }

    /// Lets every process run again (SIGCONT).
    pub fn resume(&self) -> Result<(), String> {
        self.signal("CONT")
    }

    /// Kills every process (SIGKILL): a crash, nothing flushed or handed over.
    pub fn kill(&self) -> Result<(), String> {
        self.signal("KILL")
    }

    fn signal(&self, signal: &str) -> Result<(), String> {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .args(self.pids.iter().map(u32::to_string))
            .status()
            .map_err(|e| format!("kill -{signal}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill -{signal} {:?} failed", self.pids))
        }
    }
}

/// Where `cargo xtask stack up` keeps its state (always the workspace's `target/stack`).
fn stack_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/stack")
}

/// The processes whose parent is `pid` (from `/proc/<pid>/task/*/children`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| {
            children
                .split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_processes_below_a_root() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let processes = ServerProcesses::from_root(std::process::id());
        assert!(processes.pids.contains(&child.id()), "{processes:?}");
        child.kill().ok();
        child.wait().ok();
    }
}
