//! The certificates of the stack's TLS servers, made with `openssl`: per server (under its
//! state dir, `tls/`), a CA of its own, a server certificate for 127.0.0.1 and `localhost`
//! signed by it, and a client certificate (CN `lock-stack-client`) signed by it for the
//! servers that check their clients (PostgreSQL's `cert` logins, etcd's `--client-cert-auth`,
//! ZooKeeper's `ssl.clientAuth=need`). The suites give the CA to their clients as a private
//! one, as a production setup with its own CA does.

use std::path::{Path, PathBuf};

use super::{Server, StateDir};
use crate::cmd;
use crate::{Error, Result};

/// The Debian package of the `openssl` command the certificates are made with.
pub(crate) const OPENSSL_PACKAGE: &str = "openssl";

/// The client certificate's common name.
pub(crate) const CLIENT_NAME: &str = "lock-stack-client";

/// Makes, in `dir`, `ca.crt`/`ca.key`, `server.crt`/`server.key` (for 127.0.0.1 and
/// `localhost`) and `client.crt`/`client.key`, unless they are there: valid for 30 days, made
/// again once a day so a long-lived checkout never has an expired one. A server started with
/// them keeps the ones it read; the next start of that server makes fresh ones.
pub(crate) fn make_certificates(dir: &Path) -> Result<()> {
    let fresh = ["server.crt", "client.crt"].iter().all(|file| {
        dir.join(file)
            .metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|made| made.elapsed().is_ok_and(|age| age.as_secs() < 24 * 3600))
    });
    if fresh {
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .map_err(|err| Error::failed(format!("cannot create {}: {err}", dir.display())))?;
    for (file, text) in [
        ("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"),
        ("client.ext", "extendedKeyUsage=clientAuth\n"),
    ] {
        std::fs::write(dir.join(file), text)
            .map_err(|err| Error::failed(format!("cannot write in {}: {err}", dir.display())))?;
    }
    let mut steps: Vec<Vec<String>> = vec![words(
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj",
    )];
    steps[0].push("/CN=lock-stack test CA".to_owned());
    for (name, subject) in [("server", "127.0.0.1"), ("client", CLIENT_NAME)] {
        let mut request = words(&format!(
            "req -newkey rsa:2048 -nodes -keyout {name}.key -out {name}.csr -subj"
        ));
        request.push(format!("/CN={subject}"));
        steps.push(request);
        steps.push(words(&format!(
            "x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out {name}.crt \
             -days 30 -extfile {name}.ext"
        )));
    }
    for args in steps {
        let mut openssl = cmd::command("openssl", &args);
        openssl.current_dir(dir);
        // Its progress dots go to stderr: shown only when it fails.
        let output = openssl
            .output()
            .map_err(|err| Error::failed(format!("could not run openssl: {err}")))?;
        if !output.status.success() {
            return Err(Error::failed(format!(
                "`{}` failed: {}",
                cmd::display(&openssl),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
    }
    Ok(())
}

/// Where `server`'s certificates are kept: `tls/` in its state dir.
pub(crate) fn dir_of(server: &dyn Server) -> PathBuf {
    StateDir::of(server).dir.join("tls")
}

/// `text`'s words, as arguments.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// `path` as it may stand in a URL's query (`sslrootcert=..`): every byte but unreserved ones
/// and `/` percent-encoded.
pub(crate) fn url_path(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
