//! Python's kazoo: not a server, but the second, independent ZooKeeper client the
//! `zookeeper_interop` suite of lock-core runs against our backend (kazoo's own lock recipe on
//! the same lock path). Whoever starts ZooKeeper is about to run that suite, so it is installed
//! alongside, like `protoc` alongside etcd.

use crate::cmd;
use crate::{Error, Result};

/// The interpreter the suite runs (`python3` on PATH, as the test looks it up).
const PYTHON: &str = "python3";

/// The PyPI requirement: 2.7.1 added `Lock(..., extra_lock_patterns=...)`, which the suite
/// uses to make kazoo wait for Curator-named nodes.
const REQUIREMENT: &str = "kazoo>=2.7.1";

/// Debian's kazoo, which also brings `python3` when there is none at all.
pub(super) const APT_PACKAGE: &str = "python3-kazoo";

/// Whether `python3` is not on PATH. Then [`APT_PACKAGE`] joins the `apt-get install` (it
/// depends on Debian's python3), and [`ensure`] finds kazoo importable afterwards.
pub(super) fn python_missing() -> bool {
    cmd::which(PYTHON).is_none()
}

/// Whether `python3` imports a kazoo whose `Lock` takes `extra_lock_patterns`.
fn importable() -> bool {
    cmd::probe(&mut cmd::command(
        PYTHON,
        [
            "-c",
            "import inspect, kazoo.recipe.lock as m; \
             inspect.signature(m.Lock).parameters['extra_lock_patterns']",
        ],
    ))
    .is_some()
}

/// Installs kazoo for `python3` with pip (from PyPI) when it is not importable. pip installs
/// into the interpreter's own site-packages, or the user's when that is not writable: no sudo.
pub(super) fn ensure() -> Result<()> {
    if importable() {
        return Ok(());
    }
    if python_missing() {
        return Err(Error::failed(format!(
            "`{PYTHON}` is not on PATH; install it with kazoo (Debian: `{APT_PACKAGE}`), then re-run"
        )));
    }
    eprintln!("xtask: installing {REQUIREMENT} for {PYTHON} (the ZooKeeper interop test's client)");
    let mut pip = cmd::command(
        PYTHON,
        [
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            REQUIREMENT,
        ],
    );
    // pip warns about running as root; on a CI box that is the point.
    pip.env("PIP_ROOT_USER_ACTION", "ignore");
    cmd::run(&mut pip).map_err(|err| {
        Error::failed(format!(
            "installing kazoo failed ({err}); install it for `{PYTHON}` yourself \
             (`{PYTHON} -m pip install '{REQUIREMENT}'`, or Debian's `{APT_PACKAGE}`), then re-run"
        ))
    })?;
    if importable() {
        Ok(())
    } else {
        Err(Error::failed(format!(
            "`{PYTHON}` still cannot import kazoo after `pip install '{REQUIREMENT}'`"
        )))
    }
}
