//! [`Abandoned`]: an acquisition that ended without handing its grant to the caller, as
//! [`LockBackend::release_abandoned`](super::LockBackend::release_abandoned) is told of it.

use super::LeaseKind;
use crate::{LockKey, OwnerToken};

/// An acquisition of `kind` on `key` under `owner` whose future was dropped, or which failed
/// after a command may have reached the store: whatever the store holds for the key under
/// this owner token is to be released.
///
/// ```
/// use lock_core::backend::{Abandoned, LeaseKind};
/// use lock_core::{LockBackend, LockKey, MemoryBackend, OwnerToken};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let abandoned = Abandoned {
///     key: LockKey::new("shop", "sku:1")?,
///     kind: LeaseKind::Exclusive,
///     owner: OwnerToken::random()?,
/// };
/// assert!(!MemoryBackend::new().release_abandoned(&abandoned).await?, "nothing was left");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Abandoned {
    /// The validated, namespaced key.
    pub key: LockKey,
    /// What the acquisition asked for.
    pub kind: LeaseKind,
    /// The acquisition's owner token (a fresh random one per acquisition).
    pub owner: OwnerToken,
}
