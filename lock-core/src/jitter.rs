//! Jitter: spreads periodic re-checks so that many of them do not arrive together.

use std::time::Duration;

/// Spreads re-checks of many waiters (and the probes of many breakers) over ±20% of `base`,
/// so they do not arrive together.
pub(crate) fn jitter(base: Duration) -> Duration {
    let mut byte = [0u8; 1];
    let spread = if getrandom::fill(&mut byte).is_ok() {
        f64::from(byte[0]) / 255.0
    } else {
        0.5
    };
    base.mul_f64(0.8 + 0.4 * spread)
}
