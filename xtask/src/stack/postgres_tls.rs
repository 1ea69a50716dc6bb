//! PostgreSQL over TLS: a second cluster on 127.0.0.1:25433 (under
//! `target/stack/postgres-tls/`) that takes TLS connections and nothing else, its certificate
//! for 127.0.0.1 signed by a CA of its own ([`super::certs`]), with two ways in: the
//! `postgres` user with a password (`hostssl .. scram-sha-256`), and the user
//! `lock-stack-client` with the client certificate of that name (`hostssl .. cert`).
//!
//! `LOCK_TEST_POSTGRES_TLS_URL` is the URL for `postgres` with its password,
//! `sslmode=verify-full` and the CA as `sslrootcert`, as a production URL with a private CA
//! is; `LOCK_TEST_POSTGRES_TLS_CA`, `LOCK_TEST_POSTGRES_TLS_CERT` and
//! `LOCK_TEST_POSTGRES_TLS_KEY` are the CA's and the client certificate's PEM files.

use std::fs;
use std::path::{Path, PathBuf};

use super::certs::{self, make_certificates, CLIENT_NAME};
use super::postgres::{init_cluster, launch, newest_versioned_bin, service_owner, Postgres};
use super::{Server, StateDir};
use crate::{cmd, Error, Result};

/// The stack's TLS PostgreSQL.
pub(crate) struct PostgresTls;

/// Default port: the plain PostgreSQL's (25432) plus one.
const DEFAULT_PORT: u16 = 25433;

/// The `postgres` user's password (a throwaway server on loopback: not a secret).
pub(crate) const PASSWORD: &str = "lock-stack-tls";

/// Who may connect, and how, from loopback: over TLS, `postgres` with its password, the
/// client certificate's user with the certificate; nothing in plain text.
const HBA: &str = "\
# The stack's TLS PostgreSQL (cargo xtask stack): TLS with a password or a certificate.
hostssl all postgres 127.0.0.1/32 scram-sha-256
hostssl all lock-stack-client 127.0.0.1/32 cert
hostnossl all all 127.0.0.1/32 reject
";

impl PostgresTls {
    /// The CA's PEM file of the running (or next) instance.
    fn ca_file(&self) -> PathBuf {
        certs::dir_of(self).join("ca.crt")
    }
}

/// Creates the login role of the client certificate's user (a superuser, like `postgres`) in
/// the new cluster at `data`, in single-user mode (before the server runs), as `owner`.
fn create_certificate_user(program: &Path, data: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    let mut single = cmd::command(program, ["--single", "-D"]);
    single.arg(data).arg("postgres");
    single
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null());
    if let Some((uid, gid)) = owner {
        single.uid(uid).gid(gid);
    }
    cmd::echo(&single);
    let mut child = single
        .spawn()
        .map_err(|err| Error::failed(format!("could not run {}: {err}", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        writeln!(stdin, "CREATE ROLE \"{CLIENT_NAME}\" LOGIN SUPERUSER;")
            .map_err(|err| Error::failed(format!("cannot talk to postgres --single: {err}")))?;
    }
    let status = child
        .wait()
        .map_err(|err| Error::failed(format!("postgres --single: {err}")))?;
    cmd::check(&single, status)
}

impl Server for PostgresTls {
    fn name(&self) -> &'static str {
        "postgres-tls"
    }

    fn binary(&self) -> &'static str {
        Postgres.binary()
    }

    fn apt_package(&self) -> &'static str {
        Postgres.apt_package()
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_POSTGRES_TLS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_POSTGRES_TLS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!(
            "postgres://postgres:{PASSWORD}@127.0.0.1:{port}/postgres?sslmode=verify-full&sslrootcert={}",
            certs::url_path(&self.ca_file())
        )
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        let path = |name: &str| certs::dir_of(self).join(name).display().to_string();
        vec![
            ("LOCK_TEST_POSTGRES_TLS_CA", path("ca.crt")),
            ("LOCK_TEST_POSTGRES_TLS_CERT", path("client.crt")),
            ("LOCK_TEST_POSTGRES_TLS_KEY", path("client.key")),
        ]
    }

    fn locate(&self) -> Option<PathBuf> {
        Postgres.locate()
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let tls = certs::dir_of(self);
        make_certificates(&tls)?;
        let owner = service_owner()?;
        let data = state.dir.join("data");
        if !data.join("PG_VERSION").exists() {
            let password_file = state.dir.join("password");
            write(&password_file, PASSWORD)?;
            let made = init_cluster(program, &data, owner, Some(&password_file));
            fs::remove_file(&password_file).ok();
            made?;
            create_certificate_user(program, &data, owner)?;
        }
        // The server reads its certificate, key, the CA its clients' certificates are checked
        // against and its rules from its data dir (`server.crt`, `server.key` and
        // `pg_hba.conf` are the defaults); it refuses a key others may read.
        for file in ["server.crt", "server.key", "ca.crt"] {
            let target = data.join(file);
            fs::copy(tls.join(file), &target).map_err(|err| {
                Error::failed(format!("cannot copy {file} to {}: {err}", target.display()))
            })?;
            hand_over(&target, owner)?;
        }
        let hba = data.join("pg_hba.conf");
        write(&hba, HBA)?;
        hand_over(&hba, owner)?;
        let settings = ["ssl=on".to_owned(), "ssl_ca_file=ca.crt".to_owned()];
        launch(program, state, port, owner, &settings)
    }

    /// `pg_isready`: the server accepts connections (it answers without a valid login, so the
    /// TLS-and-password rules do not matter).
    fn ping(&self, port: u16) -> bool {
        let program = newest_versioned_bin("pg_isready").or_else(|| cmd::which("pg_isready"));
        let Some(program) = program else {
            return false;
        };
        let mut ready = cmd::command(
            program,
            ["-q", "-h", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        );
        cmd::probe(&mut ready).is_some()
    }
}

/// Writes `text` to `path`.
fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text)
        .map_err(|err| Error::failed(format!("cannot write {}: {err}", path.display())))
}

/// Gives `path` to `owner` (when xtask runs as root), readable by it alone.
fn hand_over(path: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let failed = |err: std::io::Error| {
        Error::failed(format!(
            "cannot hand {} to the server: {err}",
            path.display()
        ))
    };
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(failed)?;
    }
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).map_err(failed)
}
