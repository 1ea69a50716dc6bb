//! MySQL (MariaDB) over TLS: a second `mariadbd` on 127.0.0.1:23307 (data under
//! `target/stack/mysql-tls/`) with `require_secure_transport` (a TCP login without TLS is
//! refused), its certificate for 127.0.0.1 signed by a CA of its own ([`super::certs`]), and a
//! user `lock_tls` with a password and `REQUIRE SSL`, granted the `locks` database only.
//! `LOCK_TEST_MYSQL_TLS_URL` is its URL with `ssl-mode=VERIFY_IDENTITY` and the CA as
//! `ssl-ca`, as a production URL with a private CA is; `LOCK_TEST_MYSQL_TLS_CA` is the CA's
//! PEM file.

use std::path::{Path, PathBuf};

use super::certs::{self, make_certificates};
use super::mysql::{greets, launch, Mysql};
use super::{Server, StateDir};
use crate::Result;

/// The stack's TLS MySQL.
pub(crate) struct MysqlTls;

/// Default port: the plain MySQL's (23306) plus one.
const DEFAULT_PORT: u16 = 23307;

/// The env var naming the CA's PEM file.
const CA_ENV: &str = "LOCK_TEST_MYSQL_TLS_CA";

/// The user the suites log in as, and its password (a throwaway server on loopback: not a
/// secret).
const USER: &str = "lock_tls";
const PASSWORD: &str = "lock-stack-tls";

impl MysqlTls {
    /// The CA's PEM file of the running (or next) instance.
    fn ca_file(&self) -> PathBuf {
        certs::dir_of(self).join("ca.crt")
    }
}

impl Server for MysqlTls {
    fn name(&self) -> &'static str {
        "mysql-tls"
    }

    fn binary(&self) -> &'static str {
        Mysql.binary()
    }

    fn apt_package(&self) -> &'static str {
        Mysql.apt_package()
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn port_env(&self) -> &'static str {
        "LOCK_STACK_MYSQL_TLS_PORT"
    }

    fn url_env(&self) -> &'static str {
        "LOCK_TEST_MYSQL_TLS_URL"
    }

    fn url(&self, port: u16) -> String {
        format!(
            "mysql://{USER}:{PASSWORD}@127.0.0.1:{port}/locks?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
            certs::url_path(&self.ca_file())
        )
    }

    fn extra_env(&self) -> Vec<(&'static str, String)> {
        vec![(CA_ENV, self.ca_file().display().to_string())]
    }

    fn locate(&self) -> Option<PathBuf> {
        Mysql.locate()
    }

    fn start(&self, program: &Path, state: &StateDir, port: u16) -> Result<()> {
        let tls = certs::dir_of(self);
        make_certificates(&tls)?;
        // Runs at every start (idempotent); the password is set again, in case it changed.
        let init = format!(
            "CREATE DATABASE IF NOT EXISTS locks;\n\
             CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1';\n\
             ALTER USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n\
             GRANT ALL PRIVILEGES ON locks.* TO '{USER}'@'127.0.0.1';\n"
        );
        let file = |name: &str| tls.join(name).display().to_string();
        let options = [
            format!("--ssl-cert={}", file("server.crt")),
            format!("--ssl-key={}", file("server.key")),
            format!("--ssl-ca={}", file("ca.crt")),
            "--require-secure-transport=ON".to_owned(),
        ];
        launch(program, state, port, &init, &options)
    }

    fn ping(&self, port: u16) -> bool {
        greets(port)
    }
}
