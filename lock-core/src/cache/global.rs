//! The process-wide default cache, for code that cannot be handed one (the `#[single_flight]`
//! attribute without `cache = ...`).

use std::sync::OnceLock;

use super::Cache;
use crate::{LockError, Result};

static GLOBAL: OnceLock<Cache> = OnceLock::new();

impl Cache {
    /// Installs `self` as the process-wide default cache, once, at startup. Installing a second
    /// time is refused with [`LockError::InvalidConfig`] (the first stays).
    ///
    /// ```
    /// use lock_core::cache::Cache;
    ///
    /// Cache::memory("shop").unwrap().install_global().unwrap();
    /// assert_eq!(Cache::global().unwrap().namespace(), "shop");
    /// assert!(Cache::memory("other").unwrap().install_global().is_err());
    /// ```
    pub fn install_global(self) -> Result<()> {
        GLOBAL
            .set(self)
            .map_err(|_| LockError::InvalidConfig("a global cache is already installed".into()))
    }

    /// The process-wide default cache; [`LockError::InvalidConfig`] until one is installed
    /// with [`install_global`](Self::install_global).
    pub fn global() -> Result<&'static Cache> {
        GLOBAL.get().ok_or_else(|| {
            LockError::InvalidConfig(
                "no global cache installed; call Cache::install_global at startup or pass \
                 `cache = ...` to #[single_flight]"
                    .into(),
            )
        })
    }
}
