//! How typed values become the bytes a cache stores.

/// Turns values of `V` into bytes and back. [`Bytes`] and [`Utf8`] are built in; `Json`
/// comes with the `json` feature.
///
/// ```
/// use lock_core::cache::{Codec, Utf8};
///
/// let bytes = Utf8.encode(&"lamp".to_owned()).unwrap();
/// assert_eq!(Utf8.decode(&bytes).unwrap(), "lamp");
/// ```
pub trait Codec<V>: Send + Sync + 'static {
    /// The bytes to store for `value`.
    fn encode(&self, value: &V) -> Result<Vec<u8>, String>;
    /// The value stored as `bytes`.
    fn decode(&self, bytes: &[u8]) -> Result<V, String>;
}

/// Values that are bytes already (`Vec<u8>`), stored as they are.
///
/// ```
/// use lock_core::cache::{Bytes, Codec};
///
/// assert_eq!(Bytes.decode(b"raw").unwrap(), b"raw".to_vec());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Bytes;

impl Codec<Vec<u8>> for Bytes {
    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>, String> {
        Ok(value.clone())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        Ok(bytes.to_vec())
    }
}

/// `String` values, stored as UTF-8.
///
/// ```
/// use lock_core::cache::{Codec, Utf8};
///
/// assert!(Utf8.decode(b"\xff").is_err());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Utf8;

impl Codec<String> for Utf8 {
    fn encode(&self, value: &String) -> Result<Vec<u8>, String> {
        Ok(value.as_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())
    }
}

/// Any `serde` value, stored as JSON (feature `json`).
///
/// ```
/// # #[cfg(feature = "json")] {
/// use lock_core::cache::{Codec, Json};
///
/// let bytes = Json.encode(&vec![1, 2, 3]).unwrap();
/// assert_eq!(bytes, b"[1,2,3]");
/// let back: Vec<u32> = Json.decode(&bytes).unwrap();
/// assert_eq!(back, [1, 2, 3]);
/// # }
/// ```
#[cfg(feature = "json")]
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

#[cfg(feature = "json")]
impl<V: serde::Serialize + serde::de::DeserializeOwned> Codec<V> for Json {
    fn encode(&self, value: &V) -> Result<Vec<u8>, String> {
        serde_json::to_vec(value).map_err(|e| e.to_string())
    }

    fn decode(&self, bytes: &[u8]) -> Result<V, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}
