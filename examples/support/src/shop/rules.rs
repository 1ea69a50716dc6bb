//! What each input of a shop request may be, the limits, and the 400 problem that names an
//! input that is not.

use std::time::Duration;

use lock_core::http::{problem_body, PROBLEM_JSON};
use lock_core::lease::{MAX_LEASE_TTL, MIN_LEASE_TTL};
pub use lock_core::stock::MAX_ORDER_ID_LEN;

use super::{Answer, Route};

/// The longest SKU accepted, in bytes of UTF-8 after percent-decoding, on every route and
/// strategy.
pub const MAX_SKU_LEN: usize = 256;

/// What the lock strategy puts before a SKU to name its lock.
pub const LOCK_KEY_PREFIX: &str = "sku:";

// The lock strategy's key must hold every SKU the other strategies accept.
const _: () = assert!(LOCK_KEY_PREFIX.len() + MAX_SKU_LEN <= lock_core::MAX_KEY_LEN);

/// The shortest reservation `ttl_ms` accepted (the store's shortest TTL).
pub const MIN_TTL_MS: u64 = MIN_LEASE_TTL.as_millis() as u64;

/// The longest reservation `ttl_ms` accepted (24 h, the store's longest TTL).
pub const MAX_TTL_MS: u64 = MAX_LEASE_TTL.as_millis() as u64;

/// The problem `type` of a refused input.
pub const BAD_INPUT: &str = "urn:flash-sale:bad-input";

/// Why a request's input was refused: a 400 problem naming the input and what it allows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input} {reason}; allowed: {allowed}")]
pub struct BadInput {
    /// The input: `sku`, `Order-Id`, `ttl_ms`, `query` or `body`.
    pub input: &'static str,
    /// What is wrong with it.
    pub reason: String,
    /// What it may be.
    pub allowed: String,
}

impl BadInput {
    pub(super) fn sku(reason: String) -> Self {
        Self {
            input: "sku",
            reason,
            allowed: format!(
                "1..={MAX_SKU_LEN} bytes of UTF-8 after percent-decoding, no control characters"
            ),
        }
    }

    pub(super) fn order_id(reason: String) -> Self {
        Self {
            input: "Order-Id",
            reason,
            allowed: format!(
                "one header of 1..={MAX_ORDER_ID_LEN} bytes of UTF-8, no control characters, \
                 or none (one is generated)"
            ),
        }
    }

    pub(super) fn ttl(reason: String) -> Self {
        Self {
            input: "ttl_ms",
            reason,
            allowed: format!(
                "one whole number of milliseconds in {MIN_TTL_MS}..={MAX_TTL_MS}, \
                 or none (the server's --reservation-ms)"
            ),
        }
    }

    pub(super) fn query(route: Route, reason: String) -> Self {
        let allowed = match route.query_params() {
            [] => "no query parameters on this route".to_owned(),
            names => format!("the query parameters {}", names.join(", ")),
        };
        Self {
            input: "query",
            reason,
            allowed,
        }
    }

    pub(super) fn body(reason: String) -> Self {
        Self {
            input: "body",
            reason,
            allowed: "no body (send the order id in the Order-Id header)".to_owned(),
        }
    }

    /// The 400 `application/problem+json` answer, with `input` and `allowed` members.
    ///
    /// ```
    /// use example_support::shop::check_sku;
    ///
    /// let answer = check_sku("").unwrap_err().answer();
    /// let body = String::from_utf8(answer.body).unwrap();
    /// assert!(body.contains(r#""status":400"#) && body.contains(r#""input":"sku""#), "{body}");
    /// ```
    #[must_use]
    pub fn answer(&self) -> Answer {
        Answer {
            status: 400,
            content_type: PROBLEM_JSON,
            body: problem_body(
                BAD_INPUT,
                "Bad input",
                400,
                &self.to_string(),
                &[("input", self.input), ("allowed", &self.allowed)],
            ),
            retry_after: None,
        }
    }
}

/// Checks a decoded SKU: 1..=[`MAX_SKU_LEN`] bytes, no control characters.
///
/// ```
/// use example_support::shop::{check_sku, MAX_SKU_LEN};
///
/// assert!(check_sku("café-1").is_ok());
/// assert!(check_sku(&"s".repeat(MAX_SKU_LEN + 1)).is_err());
/// assert!(check_sku("a\0b").is_err());
/// ```
pub fn check_sku(sku: &str) -> Result<(), BadInput> {
    check_text(sku, MAX_SKU_LEN).map_err(BadInput::sku)
}

/// Checks an order id: 1..=[`MAX_ORDER_ID_LEN`] bytes, no control characters.
///
/// ```
/// use example_support::shop::{check_order_id, MAX_ORDER_ID_LEN};
///
/// assert!(check_order_id("order-42").is_ok());
/// assert!(check_order_id(&"o".repeat(MAX_ORDER_ID_LEN + 1)).is_err());
/// assert!(check_order_id("").is_err());
/// ```
pub fn check_order_id(order: &str) -> Result<(), BadInput> {
    check_text(order, MAX_ORDER_ID_LEN).map_err(BadInput::order_id)
}

/// Parses a reservation TTL in milliseconds: decimal digits only (no sign, fraction,
/// exponent or spaces), within [`MIN_TTL_MS`]..=[`MAX_TTL_MS`].
///
/// ```
/// use std::time::Duration;
/// use example_support::shop::parse_ttl_ms;
///
/// assert_eq!(parse_ttl_ms("250"), Ok(Duration::from_millis(250)));
/// for bad in ["0", "-5", "1e30", "1.5", "", "18446744073709551616", "86400001"] {
///     assert_eq!(parse_ttl_ms(bad).unwrap_err().input, "ttl_ms", "{bad}");
/// }
/// ```
pub fn parse_ttl_ms(text: &str) -> Result<Duration, BadInput> {
    if text.is_empty() {
        return Err(BadInput::ttl("is empty".into()));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        let shown: String = text.chars().take(32).collect();
        return Err(BadInput::ttl(format!(
            "{shown:?} is not a whole number of milliseconds"
        )));
    }
    match text.parse::<u64>() {
        Ok(ms) if (MIN_TTL_MS..=MAX_TTL_MS).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(BadInput::ttl(format!(
            "{} is out of range",
            text.chars().take(32).collect::<String>()
        ))),
    }
}

/// Checks a reservation TTL given another way (the `--reservation-ms` flag) against the
/// range `ttl_ms` allows.
pub fn check_ttl(ttl: Duration) -> Result<(), BadInput> {
    let ms = ttl.as_millis();
    if (u128::from(MIN_TTL_MS)..=u128::from(MAX_TTL_MS)).contains(&ms) {
        Ok(())
    } else {
        Err(BadInput::ttl(format!("{ms} is out of range")))
    }
}

/// Non-empty, at most `max` bytes, no control characters (NUL, C0, DEL, C1).
fn check_text(value: &str, max: usize) -> Result<(), String> {
    if value.is_empty() {
        return Err("is empty".into());
    }
    if value.len() > max {
        return Err(format!("is {} bytes long", value.len()));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(format!(
            "contains the control character U+{:04X}",
            u32::from(c)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_ttls_are_checked_against_the_same_range() {
        assert!(check_ttl(Duration::from_millis(MIN_TTL_MS)).is_ok());
        assert!(check_ttl(Duration::from_millis(MAX_TTL_MS)).is_ok());
        assert!(check_ttl(Duration::ZERO).is_err());
        assert!(check_ttl(Duration::from_millis(MAX_TTL_MS + 1)).is_err());
    }

    #[test]
    fn text_is_limited_and_free_of_control_characters() {
        assert!(check_sku(&"é".repeat(MAX_SKU_LEN / 2)).is_ok());
        assert!(check_sku(&("é".repeat(MAX_SKU_LEN / 2) + "x")).is_err());
        for bad in ["", "a\tb", "a\u{7f}", "a\u{85}", "\0"] {
            assert_eq!(check_sku(bad).unwrap_err().input, "sku", "{bad:?}");
            assert_eq!(
                check_order_id(bad).unwrap_err().input,
                "Order-Id",
                "{bad:?}"
            );
        }
    }
}
