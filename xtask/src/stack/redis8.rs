//! Redis 8.0.2, built from source for the `redis-secure` set ([`super::redis_secure`]): the
//! set's tests use `WAITAOF`, which needs Redis 7.2+, and Debian bookworm packages Redis 7.0.
//! The source is Debian trixie's tarball of Redis 8.0.2 (`redis_8.0.2.orig.tar.gz` from
//! deb.debian.org), downloaded with `curl`, checked against a pinned SHA-256 (the download is
//! plain HTTP; the pin is what makes it trustworthy), unpacked with `tar` and built with
//! `make BUILD_TLS=yes MALLOC=libc` (about 2 minutes on 2 cores).
//!
//! The result is `target/stack/redis-8.0.2/`: `bin/` with `redis-server` and `redis-cli` (both
//! with TLS), and the build's `build.log`; nothing else of the build is kept. The build happens
//! in `target/stack/redis-8.0.2.partial/`, which is renamed to `redis-8.0.2/` only once both
//! binaries are in it, so an interrupted build is never taken as done (the next one starts
//! over). When the binaries are there, nothing is downloaded or built.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use super::{apt_install, log_tail, stack_dir};
use crate::{cmd, Error, Result};

/// The Redis version built.
pub(crate) const VERSION: &str = "8.0.2";

/// Debian's source tarball of [`VERSION`].
const TARBALL_URL: &str = "http://deb.debian.org/debian/pool/main/r/redis/redis_8.0.2.orig.tar.gz";

/// SHA-256 of the tarball at [`TARBALL_URL`]; a download with another digest is refused.
const TARBALL_SHA256: &str = "caf3c0069f06fc84c5153bd2a348b204c578de80490c73857bee01d9b5d7401f";

/// The tarball's file name.
const TARBALL: &str = "redis_8.0.2.orig.tar.gz";

/// The directory the tarball unpacks into.
const SOURCE_DIR: &str = "redis-8.0.2";

/// What the build needs, as (a program on PATH or an absolute file, the Debian package
/// providing it). `gcc` only recommends the C library's headers, hence `libc6-dev`; `tar` and
/// `sha256sum` are essential packages, always there.
const BUILD_NEEDS: &[(&str, &str)] = &[
    ("curl", "curl"),
    ("gcc", "gcc"),
    ("make", "make"),
    ("pkg-config", "pkg-config"),
    ("/usr/include/stdio.h", "libc6-dev"),
    ("/usr/include/openssl/ssl.h", "libssl-dev"),
];

/// `target/stack/redis-8.0.2/`: the built binaries, in `bin/`.
fn install_dir() -> PathBuf {
    stack_dir().join(format!("redis-{VERSION}"))
}

/// `target/stack/redis-8.0.2.partial/`: where a build in progress (or an interrupted one) is.
fn partial_dir() -> PathBuf {
    stack_dir().join(format!("redis-{VERSION}.partial"))
}

/// The built program `name` (`redis-server`, `redis-cli`), if the build is done.
fn built(name: &str) -> Option<PathBuf> {
    let path = install_dir().join("bin").join(name);
    cmd::is_executable(&path).then_some(path)
}

/// The built `redis-server`, if the build is done.
pub(crate) fn server() -> Option<PathBuf> {
    built("redis-server")
}

/// The built `redis-cli` (with TLS), if the build is done.
pub(crate) fn cli() -> Option<PathBuf> {
    built("redis-cli")
}

/// The Debian packages the build needs that are missing; none once Redis 8 is built.
pub(crate) fn missing_packages() -> Vec<&'static str> {
    if server().is_some() && cli().is_some() {
        return Vec::new();
    }
    BUILD_NEEDS
        .iter()
        .filter(|(need, _)| {
            if need.starts_with('/') {
                !Path::new(need).exists()
            } else {
                cmd::which(need).is_none()
            }
        })
        .map(|(_, package)| *package)
        .collect()
}

/// Builds Redis 8 unless it is built: installs what the build needs (as [`apt_install`] does:
/// as root with apt, else fails with the command to run), downloads and checks the tarball,
/// builds it in [`partial_dir`], keeps the two binaries and renames the directory to
/// [`install_dir`].
pub(crate) fn ensure_built() -> Result<()> {
    if server().is_some() && cli().is_some() {
        return Ok(());
    }
    apt_install(&missing_packages())?;
    println!(
        "building Redis {VERSION} from Debian's source for the redis-secure set (WAITAOF needs \
         Redis 7.2+); about 2 minutes"
    );
    let began = Instant::now();
    let partial = partial_dir();
    remove_dir_if_exists(&partial)?;
    fs::create_dir_all(&partial)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", partial.display())))?;

    let tarball = partial.join(TARBALL);
    let mut curl = cmd::command("curl", ["-fsSL", "-o"]);
    curl.arg(&tarball).arg(TARBALL_URL);
    cmd::run(&mut curl)?;
    check_digest(&tarball)?;
    let mut tar = cmd::command("tar", ["-xzf"]);
    tar.arg(&tarball).arg("-C").arg(&partial);
    cmd::run(&mut tar)?;

    // Thousands of lines: into a log, whose tail is shown if the build fails.
    let log_path = partial.join("build.log");
    let log = fs::File::create(&log_path)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|err| Error::failed(format!("cannot open {}: {err}", log_path.display())))?;
    let source = partial.join(SOURCE_DIR);
    let mut make = cmd::command("make", ["-j2", "BUILD_TLS=yes", "MALLOC=libc"]);
    make.current_dir(&source)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    let status = cmd::status(&mut make)?;
    if !status.success() {
        return Err(Error::failed(format!(
            "building Redis {VERSION} failed (`{}` in {}).\n{}",
            cmd::display(&make),
            source.display(),
            log_tail(&log_path)
        )));
    }

    let bin = partial.join("bin");
    fs::create_dir_all(&bin)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", bin.display())))?;
    for name in ["redis-server", "redis-cli"] {
        let from = source.join("src").join(name);
        fs::copy(&from, bin.join(name)).map_err(|err| {
            Error::failed(format!(
                "cannot copy {} to {}: {err}",
                from.display(),
                bin.display()
            ))
        })?;
    }
    // Only the binaries are kept (the built source tree is about 90 MB).
    remove_dir_if_exists(&source)?;
    fs::remove_file(&tarball)
        .map_err(|err| Error::failed(format!("cannot remove {}: {err}", tarball.display())))?;
    let done = install_dir();
    // A directory without the binaries (they were deleted by hand) would block the rename.
    remove_dir_if_exists(&done)?;
    fs::rename(&partial, &done).map_err(|err| {
        Error::failed(format!(
            "cannot rename {} to {}: {err}",
            partial.display(),
            done.display()
        ))
    })?;
    println!(
        "built Redis {VERSION} in {}s: {}",
        began.elapsed().as_secs(),
        done.join("bin").display()
    );
    Ok(())
}

/// Checks `tarball`'s SHA-256 (`sha256sum`) against [`TARBALL_SHA256`].
fn check_digest(tarball: &Path) -> Result<()> {
    let mut sha256sum = cmd::command("sha256sum", [tarball]);
    cmd::echo(&sha256sum);
    let output = cmd::probe(&mut sha256sum)
        .ok_or_else(|| Error::failed(format!("`{}` failed", cmd::display(&sha256sum))))?;
    let digest = output.split_whitespace().next().unwrap_or_default();
    if digest != TARBALL_SHA256 {
        return Err(Error::failed(format!(
            "{TARBALL_URL} has SHA-256 {digest}, not the pinned {TARBALL_SHA256}; refusing to \
             build it (the download is left in {})",
            tarball.display()
        )));
    }
    Ok(())
}

/// Removes the directory `dir` and everything in it; one that is not there is fine.
fn remove_dir_if_exists(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::failed(format!(
            "cannot remove {}: {err}",
            dir.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::check_digest;

    #[test]
    fn a_tarball_with_another_digest_is_refused() {
        let path = std::env::temp_dir().join(format!("xtask-redis8-{}.tar.gz", std::process::id()));
        std::fs::write(&path, b"not the tarball").unwrap();
        let err = check_digest(&path).expect_err("a wrong digest was accepted");
        std::fs::remove_file(&path).unwrap();
        assert!(err.to_string().contains("refusing"), "{err}");
    }
}
