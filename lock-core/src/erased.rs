//! A value shared across callers whatever its type, and recovered as that type by the callers
//! that know it: how one flight of the cache hands its computation's error to callers whose
//! error types may differ (a caller of another type gets the error's message instead).

use std::any::Any;
use std::sync::Arc;

/// A computation's error, shared across the callers of one flight whatever its type.
pub(crate) type AnyError = Arc<dyn Any + Send + Sync>;

/// How a call shares its computation's error with the callers of its flight, as
/// `CacheError::Shared`: the flight carries it as an [`AnyError`] (callers of one key may
/// differ in error type: one whose type is not the error's gets its message).
pub(crate) struct Typed<E> {
    pub(crate) erase: fn(Arc<E>) -> AnyError,
    pub(crate) recover: fn(AnyError) -> Option<Arc<E>>,
}

impl<E: Send + Sync + 'static> Typed<E> {
    pub(crate) fn new() -> Self {
        Self {
            erase: |error| error,
            recover: |error| error.downcast().ok(),
        }
    }
}

impl<E> Clone for Typed<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Typed<E> {}
