//! One node of a [`RedLock`](super::RedLock): a connected [`RedisBackend`], or one still being
//! connected in the background (unreachable when the RedLock started), named in every error.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use super::BACKEND;
use crate::sync::lock;
use crate::{LockError, RedisBackend};

/// The first pause before a background connection tries again; it doubles up to
/// [`RECONNECT_MAX`].
const RECONNECT_FIRST: Duration = Duration::from_millis(100);

/// The longest pause between two background connection attempts.
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// A node: its backend once connected, and a label (`node <i> (<host>:<port>)`, no password)
/// for errors.
#[derive(Debug)]
pub(super) struct Node {
    label: String,
    backend: Arc<OnceLock<RedisBackend>>,
    /// Why the node is not connected yet (the last attempt's error).
    not_connected: Arc<Mutex<String>>,
}

impl Node {
    /// The `index`th node, connected.
    pub(super) fn connected(index: usize, backend: RedisBackend) -> Self {
        let address = backend.server().to_owned();
        Self {
            label: format!("node {index} ({address})"),
            backend: Arc::new(OnceLock::from(backend)),
            not_connected: Arc::default(),
        }
    }

    /// The `index`th node, at `url`, whose first connection failed with `error`: connected
    /// again and again in a task of its own (the pause doubling from 100 ms to 5 s) until it
    /// answers, or until the RedLock is gone. Until then every call on it fails at once,
    /// naming it.
    pub(super) fn connecting(index: usize, url: &str, error: &LockError) -> Self {
        let node = Self {
            label: format!("node {index} ({})", address_of(url)),
            backend: Arc::default(),
            not_connected: Arc::new(Mutex::new(error.with_causes())),
        };
        tracing::warn!(node = %node.label, error = %error.with_causes(), "RedLock node unreachable at start; connecting in the background");
        let (slot, why, url, label) = (
            Arc::downgrade(&node.backend),
            node.not_connected.clone(),
            url.to_owned(),
            node.label.clone(),
        );
        tokio::spawn(connect_in_background(slot, why, url, label));
        node
    }

    /// The backend, once connected.
    pub(super) fn backend(&self) -> Option<&RedisBackend> {
        self.backend.get()
    }

    /// The error of a call on this node while it is not connected.
    pub(super) fn unreachable(&self) -> LockError {
        LockError::unavailable(
            BACKEND,
            format!(
                "{} not connected: {}",
                self.label,
                lock(&self.not_connected)
            ),
        )
    }

    /// How errors name this node.
    pub(super) fn label(&self) -> &str {
        &self.label
    }
}

/// The `host:port` of a Redis URL, for errors (never its password).
pub(super) fn address_of(url: &str) -> String {
    redis::Client::open(url).map_or_else(
        |_| "an invalid URL".to_owned(),
        |client| client.get_connection_info().addr().to_string(),
    )
}

/// Connects `url` until it answers (then fills `slot`) or the node is gone.
async fn connect_in_background(
    slot: Weak<OnceLock<RedisBackend>>,
    why: Arc<Mutex<String>>,
    url: String,
    label: String,
) {
    let mut pause = RECONNECT_FIRST;
    loop {
        tokio::time::sleep(pause).await;
        if slot.strong_count() == 0 {
            return; // the RedLock is gone
        }
        match RedisBackend::connect(&url).await {
            Ok(backend) => {
                if let Some(slot) = slot.upgrade() {
                    tracing::info!(node = %label, "RedLock node connected");
                    slot.set(backend).ok();
                }
                return;
            }
            Err(error) => {
                *lock(&why) = error.with_causes();
                pause = (pause * 2).min(RECONNECT_MAX);
            }
        }
    }
}
