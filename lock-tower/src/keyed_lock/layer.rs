//! [`KeyedLockLayer`]: wraps services in [`KeyedLockService`]; lock-core's
//! [`HttpKeyedLockBuilder`] checks its settings once, when it is built.

use std::sync::Arc;

use lock_core::http::keyed::{HttpKeyedLock, HttpKeyedLockBuilder, KeySource, KeyedLockOptions};
use lock_core::{LockClient, LockError};
use tower_layer::Layer;

use crate::{KeyedLockService, LockRejection};

/// Applies a distributed lock per request key to the services it wraps.
///
/// `K` is where the key comes from: a [`KeySource`](lock_core::http::keyed::KeySource) or a closure
/// (see [`KeyExtractor`](crate::KeyExtractor)), or a key that needs awaiting such as
/// [`BodyKey`](crate::BodyKey). Build it with [`builder`](Self::builder): lock-core's
/// [`HttpKeyedLockBuilder`], shared with lock-actix, whose methods are the
/// [`KeyedLockOptions`] and whose [`build`](HttpKeyedLockBuilder::build) refuses invalid
/// settings:
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend};
/// use lock_tower::{BusyStatus, KeySource, KeyedLockLayer, WaitPolicy};
///
/// let layer = KeyedLockLayer::builder(LockClient::new(MemoryBackend::new()), KeySource::header("Idempotency-Key"))
///     .wait(WaitPolicy::Within(Duration::from_secs(2)))
///     .busy_status(BusyStatus::TooManyRequests)
///     .methods(["POST"])
///     .build()
///     .expect("valid settings");
/// # let _ = layer;
/// let refused = KeyedLockLayer::builder(LockClient::new(MemoryBackend::new()), KeySource::path_index(0))
///     .methods([""])
///     .build();
/// assert!(refused.is_err());
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
    /// at once when busy). A key source this build cannot serve (a route parameter without
    /// the `axum` feature) is logged here and answers 400; [`builder`](Self::builder) refuses
    /// it instead.
    pub fn new(client: LockClient, extractor: K) -> Self
    where
        K: 'static,
    {
        if let Err(error) = servable(&extractor) {
            tracing::error!(%error, "KeyedLockLayer cannot serve its key source: locked requests will answer 400");
        }
        Self {
            client,
            extractor,
            options: Arc::new(KeyedLockOptions::default()),
        }
    }

    /// Starts a layer whose settings [`build`](HttpKeyedLockBuilder::build) checks: the
    /// options, and that the key source is one this build can serve
    /// ([`KeySource::route_param`](lock_core::http::keyed::KeySource::route_param) needs the
    /// `axum` feature, for axum's `MatchedPath`; without it `build` fails naming the feature).
    pub fn builder(client: LockClient, extractor: K) -> HttpKeyedLockBuilder<K, Self>
    where
        K: 'static,
    {
        HttpKeyedLockBuilder::new(client, extractor).checked_by(servable::<K>)
    }

    /// Replaces the options. Invalid options (a lease outside lock-core's bounds) are logged
    /// here and answer 500 at request time; [`builder`](Self::builder) refuses them instead.
    pub fn options(mut self, options: KeyedLockOptions) -> Self {
        if let Err(error) = options.validate() {
            tracing::error!(%error, "invalid KeyedLockOptions: locked requests will answer 500");
        }
        self.options = Arc::new(options);
        self
    }

    /// The answer this layer gives for `error` (its `Retry-After`, busy status and
    /// [`expose_errors`](HttpKeyedLockBuilder::expose_errors) setting), for a handler that
    /// takes a lock of its own and wants to fail the same way.
    pub fn rejection(&self, error: &LockError) -> LockRejection {
        LockRejection::from_error(error, &self.options)
    }
}

/// Whether this build of lock-tower can serve `extractor`: a route parameter needs the `axum`
/// feature (without a router's matched path every request would answer 400).
fn servable<K: 'static>(extractor: &K) -> Result<(), LockError> {
    let source = (extractor as &dyn std::any::Any).downcast_ref::<KeySource>();
    match source.and_then(KeySource::route_param_name) {
        Some(name) if cfg!(not(feature = "axum")) => Err(LockError::InvalidConfig(format!(
            "KeySource::route_param(\"{name}\") needs lock-tower's `axum` feature (axum's \
             MatchedPath); enable it, or use KeySource::path_param(\"/route/{{{name}}}\", \"{name}\")"
        ))),
        _ => Ok(()),
    }
}

impl<K> From<HttpKeyedLock<K>> for KeyedLockLayer<K> {
    fn from(built: HttpKeyedLock<K>) -> Self {
        let (client, extractor, options) = built.into_parts();
        Self {
            client,
            extractor,
            options: Arc::new(options),
        }
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
