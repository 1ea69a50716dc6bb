//! The process-wide default client, for code that cannot be handed one (the
//! `#[distributed_lock]` attribute without `client = ...`).

use std::sync::OnceLock;

use crate::{LockClient, LockError, Result};

static GLOBAL: OnceLock<LockClient> = OnceLock::new();

impl LockClient {
    /// Installs `self` as the process-wide default client, once, at startup. Installing a second
    /// time is refused with [`LockError::InvalidConfig`] (the first stays).
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// LockClient::new(MemoryBackend::new()).install_global().unwrap();
    /// assert!(LockClient::global().is_ok());
    /// assert!(LockClient::new(MemoryBackend::new()).install_global().is_err());
    /// ```
    pub fn install_global(self) -> Result<()> {
        GLOBAL.set(self).map_err(|_| {
            LockError::InvalidConfig("a global lock client is already installed".into())
        })
    }

    /// The process-wide default client; [`LockError::InvalidConfig`] until one is installed
    /// with [`install_global`](Self::install_global).
    pub fn global() -> Result<&'static LockClient> {
        GLOBAL.get().ok_or_else(|| {
            LockError::InvalidConfig(
                "no global lock client installed; call LockClient::install_global at startup \
                 or pass `client = ...` to #[distributed_lock]"
                    .into(),
            )
        })
    }
}
