//! The apps' tiny authentication step: the principal is whoever `Authorization: Bearer <user>`
//! names (a demo, not a security scheme). It runs before the idempotency layer and puts the
//! [`User`] into the request's extensions; the layer's scope function reads it back, so that
//! an idempotency key belongs to the user who sent it.

use super::answer::PaymentAnswer;

/// The longest user name.
pub const MAX_USER_LEN: usize = 64;

/// The authenticated principal of a request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct User(pub String);

impl User {
    /// The user named by an `Authorization` header value: `Bearer <user>` (the scheme in any
    /// case), the name 1–64 ASCII letters, digits, `-`, `_` or `.`; else the 401 to answer.
    ///
    /// ```
    /// use example_support::payments::User;
    ///
    /// assert_eq!(User::from_authorization(Some(b"Bearer alice")).unwrap(), User("alice".into()));
    /// assert_eq!(User::from_authorization(None).unwrap_err().status, 401);
    /// assert_eq!(User::from_authorization(Some(b"Basic YTpi")).unwrap_err().status, 401);
    /// ```
    pub fn from_authorization(header: Option<&[u8]>) -> Result<Self, PaymentAnswer> {
        let Some(value) = header else {
            return Err(PaymentAnswer::unauthorized(
                "send Authorization: Bearer <user>",
            ));
        };
        let text = std::str::from_utf8(value)
            .map_err(|_| PaymentAnswer::unauthorized("the Authorization header is not text"))?;
        let name = text
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, name)| name.trim())
            .ok_or_else(|| {
                PaymentAnswer::unauthorized("the Authorization header must be Bearer <user>")
            })?;
        let valid = !name.is_empty()
            && name.len() <= MAX_USER_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(PaymentAnswer::unauthorized(&format!(
                "a user name is 1–{MAX_USER_LEN} ASCII letters, digits, '-', '_' or '.'"
            )));
        }
        Ok(Self(name.to_owned()))
    }
}

/// The idempotency scope of a request: its authenticated user's name. `None` when the
/// authentication step did not run, which the layers refuse (401) rather than share one scope
/// among such requests: the apps put authentication in front of the layer, so that never
/// happens to a payment.
#[must_use]
pub fn scope(user: Option<&User>) -> Option<String> {
    user.map(|user| user.0.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_with_a_plain_name_passes() {
        let user = |raw: &[u8]| User::from_authorization(Some(raw));
        assert_eq!(user(b"bearer  bob.b-1 ").unwrap(), User("bob.b-1".into()));
        for bad in [
            &b""[..],
            b"Bearer",
            b"Bearer ",
            b"Bearer a b",
            b"Bearer \xff",
            b"Token alice",
            b"alice",
        ] {
            let refused = user(bad).unwrap_err();
            assert_eq!(refused.status, 401, "{bad:?}");
            assert!(refused
                .headers
                .iter()
                .any(|(n, _)| *n == "www-authenticate"));
        }
        assert!(user(format!("Bearer {}", "u".repeat(MAX_USER_LEN + 1)).as_bytes()).is_err());
        assert_eq!(scope(Some(&User("carol".into()))), Some("carol".into()));
        assert_eq!(scope(None), None);
    }
}
