//! The assertions on the middleware's answers the scenarios (and the adapters' own tests)
//! share.

use super::Answer;
use lock_core::http::PROBLEM_JSON;

/// Asserts an `application/problem+json` answer with `status` and the problem type `urn`.
///
/// # Panics
/// When it is not that.
///
/// ```
/// use lock_testing::keyed_lock::{assert_problem, Answer};
///
/// let busy = Answer {
///     status: 409,
///     headers: vec![("content-type".into(), "application/problem+json".into())],
///     body: br#"{"type":"urn:distributed-lock:busy","status":409}"#.to_vec(),
/// };
/// assert_problem(&busy, 409, "urn:distributed-lock:busy");
/// ```
#[track_caller]
pub fn assert_problem(answer: &Answer, status: u16, urn: &str) {
    assert_eq!(answer.status, status, "{}", answer.text());
    assert_eq!(answer.header("content-type"), Some(PROBLEM_JSON));
    assert!(
        answer.text().contains(&format!(r#""type":"{urn}""#)),
        "{}",
        answer.text()
    );
}

/// Asserts the handler's 200 with `body` (`{key} {fence}`, or `unlocked`).
#[track_caller]
pub(super) fn assert_ran(answer: &Answer, body: &str) {
    assert_eq!((answer.status, answer.text().as_str()), (200, body));
}

/// Asserts the handler's 200 under the lock `key` (whatever its fence).
#[track_caller]
pub(super) fn assert_locked(answer: &Answer, key: &str) {
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        answer.text().starts_with(&format!("{key} ")),
        "{key}: {}",
        answer.text()
    );
}
