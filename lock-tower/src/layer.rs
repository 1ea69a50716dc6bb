//! [`KeyedLockLayer`]: wraps services in [`KeyedLockService`].

use std::sync::Arc;

use lock_core::http::KeyedLockOptions;
use lock_core::LockClient;
use tower_layer::Layer;

use crate::KeyedLockService;

/// Applies a distributed lock per request key to the services it wraps.
///
/// `K` is where the key comes from: a [`KeySource`](lock_core::http::KeySource) or a closure
/// (see [`KeyExtractor`](crate::KeyExtractor)).
///
/// ```
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_tower::{BusyStatus, KeySource, KeyedLockLayer, KeyedLockOptions};
///
/// let layer = KeyedLockLayer::new(LockClient::new(MemoryBackend::new()), KeySource::header("Idempotency-Key"))
///     .options(KeyedLockOptions::new().busy_status(BusyStatus::TooManyRequests));
/// # let _ = layer;
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct KeyedLockLayer<K> {
    client: LockClient,
    extractor: K,
    options: Arc<KeyedLockOptions>,
}

impl<K> KeyedLockLayer<K> {
    /// Locks every request on the key `extractor` finds, with the default options (reject
    /// at once when busy).
    pub fn new(client: LockClient, extractor: K) -> Self {
        Self {
            client,
            extractor,
            options: Arc::new(KeyedLockOptions::default()),
        }
    }

    /// Replaces the options. Invalid options (a lease outside lock-core's bounds) are logged
    /// here and answer 500 at request time; check them first with
    /// [`KeyedLockOptions::validate`].
    pub fn options(mut self, options: KeyedLockOptions) -> Self {
        if let Err(error) = options.validate() {
            tracing::error!(%error, "invalid KeyedLockOptions: locked requests will answer 500");
        }
        self.options = Arc::new(options);
        self
    }
}

impl<S, K: Clone> Layer<S> for KeyedLockLayer<K> {
    type Service = KeyedLockService<S, K>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedLockService::new(
            inner,
            self.client.clone(),
            self.extractor.clone(),
            self.options.clone(),
        )
    }
}
