//! What the product service answers over HTTP, decided once for both frameworks.

use crate::answer::HttpAnswer;

/// The problem type of a 503 when the origin failed (and no stale product could stand in).
pub const ORIGIN_UNAVAILABLE: &str = "urn:stampede:origin-unavailable";

/// What the product service answers: a [`HttpAnswer`], with the product service's answers
/// below.
pub type ProductAnswer = HttpAnswer;

impl HttpAnswer {
    /// A 503 when the origin failed: the response cache shares it with the requests waiting
    /// for it and remembers it for its negative TTL.
    #[must_use]
    pub fn origin_unavailable(detail: &str) -> Self {
        Self::problem(
            503,
            ORIGIN_UNAVAILABLE,
            "Product database unavailable",
            detail,
        )
        .with_header("retry-after", "1")
    }
}
