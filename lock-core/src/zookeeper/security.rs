//! How a session reaches the ensemble beyond its connect string: TLS to `tcp+tls://` servers
//! (feature `zookeeper-tls`) and SASL DIGEST-MD5 (feature `zookeeper-sasl`).

use zookeeper_client as zk;

#[cfg(feature = "zookeeper-tls")]
use crate::LockError;
use crate::Result;

/// The settings as given to the builder.
#[derive(Clone, Default)]
pub(super) struct Security {
    /// PEM of the CA certificates TLS servers are verified against.
    #[cfg(feature = "zookeeper-tls")]
    pub(super) ca: Option<Vec<u8>>,
    /// PEM of the client certificate and its key.
    #[cfg(feature = "zookeeper-tls")]
    pub(super) identity: Option<(Vec<u8>, Vec<u8>)>,
    /// SASL DIGEST-MD5 user and password.
    #[cfg(feature = "zookeeper-sasl")]
    pub(super) sasl: Option<(String, String)>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("Security");
        #[cfg(feature = "zookeeper-tls")]
        debug
            .field("ca", &self.ca.is_some())
            .field("client_identity", &self.identity.is_some());
        // The password stays out of logs.
        #[cfg(feature = "zookeeper-sasl")]
        debug.field("sasl_user", &self.sasl.as_ref().map(|(user, _)| user));
        debug.finish()
    }
}

/// What every session of a backend is opened with, checked once.
#[derive(Clone, Default)]
pub(super) struct Prepared {
    #[cfg(feature = "zookeeper-tls")]
    tls: Option<zk::TlsOptions>,
    #[cfg(feature = "zookeeper-sasl")]
    sasl: Option<(String, String)>,
}

/// Whether the connect string names a server with `tcp+tls://`.
fn names_tls(cluster: &str) -> bool {
    cluster
        .split(',')
        .any(|server| server.trim().starts_with("tcp+tls://"))
}

impl Security {
    /// Checks the settings against the connect string `cluster` and prepares them: TLS
    /// servers need the feature and a CA (zookeeper-client knows no public roots), and TLS
    /// material with no TLS server is a mistake.
    pub(super) fn prepare(&self, cluster: &str) -> Result<Prepared> {
        let tls = names_tls(cluster);
        #[cfg(not(feature = "zookeeper-tls"))]
        if tls {
            return Err(crate::LockError::InvalidConfig(format!(
                "ZooKeeper connect string {cluster:?} names a tcp+tls:// server: TLS needs \
                 lock-core's `zookeeper-tls` feature"
            )));
        }
        #[cfg(feature = "zookeeper-tls")]
        let tls = if tls {
            Some(self.tls_options(cluster)?)
        } else if self.ca.is_some() || self.identity.is_some() {
            return Err(LockError::InvalidConfig(format!(
                "a CA or client certificate was given, but ZooKeeper connect string {cluster:?} \
                 names no TLS server (tcp+tls://host:port)"
            )));
        } else {
            None
        };
        Ok(Prepared {
            #[cfg(feature = "zookeeper-tls")]
            tls,
            #[cfg(feature = "zookeeper-sasl")]
            sasl: self.sasl.clone(),
        })
    }

    /// The client's TLS options: the CA (required) and the client certificate.
    #[cfg(feature = "zookeeper-tls")]
    fn tls_options(&self, cluster: &str) -> Result<zk::TlsOptions> {
        let text = |what: &str, pem: &[u8]| {
            String::from_utf8(pem.to_vec()).map_err(|_| {
                LockError::InvalidConfig(format!("the ZooKeeper {what} is not PEM text"))
            })
        };
        let refused = |what: &str, error: zk::Error| {
            LockError::InvalidConfig(format!("the ZooKeeper {what}: {error}"))
        };
        let Some(ca) = &self.ca else {
            return Err(LockError::InvalidConfig(format!(
                "ZooKeeper connect string {cluster:?} names a tcp+tls:// server but no CA was \
                 given (ca_certificate_pem): zookeeper-client has no public root certificates"
            )));
        };
        let mut options = zk::TlsOptions::new()
            .with_pem_ca(&text("CA certificate", ca)?)
            .map_err(|e| refused("CA certificate", e))?;
        if let Some((certificate, key)) = &self.identity {
            options = options
                .with_pem_identity(
                    &text("client certificate", certificate)?,
                    &text("client key", key)?,
                )
                .map_err(|e| refused("client certificate or key", e))?;
        }
        Ok(options)
    }
}

impl Prepared {
    /// Whether sessions authenticate with SASL.
    pub(super) fn sasl(&self) -> bool {
        #[cfg(feature = "zookeeper-sasl")]
        return self.sasl.is_some();
        #[cfg(not(feature = "zookeeper-sasl"))]
        false
    }

    /// A connector with the TLS and SASL settings (the caller adds its timeouts); before a TLS
    /// connection, makes sure rustls has a process-level crypto provider.
    pub(super) fn connector(&self) -> zk::Connector {
        #[allow(unused_mut)]
        let mut connector = zk::Client::connector();
        #[cfg(feature = "zookeeper-tls")]
        if let Some(tls) = &self.tls {
            ensure_crypto_provider();
            connector = connector.with_tls(tls.clone());
        }
        #[cfg(feature = "zookeeper-sasl")]
        if let Some((user, password)) = &self.sasl {
            connector =
                connector.with_sasl(zk::SaslOptions::digest_md5(user.clone(), password.clone()));
        }
        connector
    }
}

/// Makes sure rustls has a process-level crypto provider before a TLS connection: when none is
/// installed, installs `ring`. zookeeper-client asks rustls for the process's provider, and a
/// build with both of rustls's providers (zookeeper-client's rustls brings `aws-lc-rs`, lock-core
/// `ring`) cannot choose one by itself: the first TLS connection would panic. A provider the
/// application installed first is kept.
#[cfg(feature = "zookeeper-tls")]
#[allow(
    deprecated,
    reason = "rustls 0.23.48 deprecates ring's provider (no post-quantum key exchange); ring is the provider the feature brings, and an application that wants aws-lc-rs installs it first"
)]
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_some() {
        return;
    }
    // Err: another thread installed one in between, which is as good.
    if rustls::crypto::ring::default_provider()
        .install_default()
        .is_ok()
    {
        tracing::debug!(
            "rustls had no process-level crypto provider: lock-core installed `ring` for ZooKeeper"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_servers_are_named_by_their_scheme() {
        assert!(names_tls("tcp+tls://a:2182"));
        assert!(names_tls("a:2181, tcp+tls://b:2182/chroot"));
        assert!(!names_tls("a:2181,tcp://b:2181"));
    }

    /// Without the feature, a TLS server is refused before any connection, naming it.
    #[cfg(not(feature = "zookeeper-tls"))]
    #[test]
    fn tls_needs_the_feature() {
        let error = Security::default()
            .prepare("tcp+tls://127.0.0.1:2182")
            .err()
            .expect("refused");
        assert!(
            matches!(&error, crate::LockError::InvalidConfig(why) if why.contains("zookeeper-tls")),
            "{error:?}"
        );
    }

    /// With it: a TLS server needs a CA; a CA without a TLS server, or that is not PEM, is a
    /// mistake.
    #[cfg(feature = "zookeeper-tls")]
    #[test]
    fn tls_settings_are_checked() {
        let invalid = |security: Security, cluster: &str| {
            let error = security.prepare(cluster).err().expect("refused");
            assert!(matches!(error, LockError::InvalidConfig(_)), "{error:?}");
        };
        invalid(Security::default(), "tcp+tls://127.0.0.1:2182");
        let with_ca = |pem: &[u8]| Security {
            ca: Some(pem.to_vec()),
            ..Security::default()
        };
        invalid(with_ca(b"not a certificate"), "tcp+tls://127.0.0.1:2182");
        invalid(with_ca(b"not a certificate"), "127.0.0.1:2181");
    }
}
