//! What a payment request may carry: a JSON body `{"from":"acct-a","to":"acct-b","cents":100}`,
//! checked once for both frameworks. Anything else is a 400 before any money moves.

use serde::Deserialize;

/// The longest account id.
pub const MAX_ACCOUNT_LEN: usize = 64;

/// The largest single payment, in cents (10 million units).
pub const MAX_CENTS: u64 = 1_000_000_000;

/// The problem type of a 400 answer.
pub const BAD_INPUT: &str = "urn:payments:bad-input";

/// A payment that passed [`Payment::parse`]: two different account ids of 1–64 ASCII letters,
/// digits, `-` or `_`, and an amount from 1 to [`MAX_CENTS`] cents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    /// The account the money leaves.
    pub from: String,
    /// The account the money goes to.
    pub to: String,
    /// How much, in cents.
    pub cents: u64,
}

/// The body as sent, before the rules are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPayment {
    from: String,
    to: String,
    cents: u64,
}

impl Payment {
    /// Checks a request body.
    ///
    /// ```
    /// use example_support::payments::Payment;
    ///
    /// let payment = Payment::parse(br#"{"from":"acct-a","to":"acct-b","cents":100}"#).unwrap();
    /// assert_eq!((payment.from.as_str(), payment.cents), ("acct-a", 100));
    /// assert_eq!(Payment::parse(b"{").unwrap_err().input, "body");
    /// assert_eq!(Payment::parse(br#"{"from":"a","to":"a","cents":1}"#).unwrap_err().input, "to");
    /// assert_eq!(Payment::parse(br#"{"from":"a","to":"b","cents":0}"#).unwrap_err().input, "cents");
    /// ```
    pub fn parse(body: &[u8]) -> Result<Self, BadInput> {
        let raw: RawPayment = serde_json::from_slice(body).map_err(|error| BadInput {
            input: "body",
            detail: format!(
                "the body must be a JSON object {{\"from\": account, \"to\": account, \"cents\": \
                 whole number}} and nothing else: {error}"
            ),
        })?;
        check_account("from", &raw.from)?;
        check_account("to", &raw.to)?;
        if raw.from == raw.to {
            return Err(BadInput {
                input: "to",
                detail: "a payment must go to another account than the one it leaves".into(),
            });
        }
        if !(1..=MAX_CENTS).contains(&raw.cents) {
            return Err(BadInput {
                input: "cents",
                detail: format!("the amount must be 1 to {MAX_CENTS} cents"),
            });
        }
        Ok(Self {
            from: raw.from,
            to: raw.to,
            cents: raw.cents,
        })
    }

    /// The body that [`parse`](Self::parse) reads back as this payment.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::json!({"from": self.from, "to": self.to, "cents": self.cents}).to_string()
    }
}

fn check_account(input: &'static str, account: &str) -> Result<(), BadInput> {
    let bad = |why: String| BadInput {
        input,
        detail: format!(
            "an account id must be 1–{MAX_ACCOUNT_LEN} ASCII letters, digits, '-' or '_' ({why})"
        ),
    };
    if account.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if account.len() > MAX_ACCOUNT_LEN {
        return Err(bad(format!("it is {} bytes long", account.len())));
    }
    match account
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
    {
        Some(c) => Err(bad(format!("it contains {c:?}"))),
        None => Ok(()),
    }
}

/// Input a request may not carry: answered 400 before any money moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput {
    /// Which part was wrong: `body`, `from`, `to`, `cents`.
    pub input: &'static str,
    /// Why, for the problem's `detail`.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_checked_strictly() {
        let ok = Payment::parse(br#"{"cents":5,"to":"b_2","from":"A-1"}"#).unwrap();
        assert_eq!(
            ok,
            Payment {
                from: "A-1".into(),
                to: "b_2".into(),
                cents: 5
            }
        );
        assert_eq!(Payment::parse(ok.to_json().as_bytes()).unwrap(), ok);
        let long = "a".repeat(MAX_ACCOUNT_LEN + 1);
        for (body, input) in [
            (&b""[..], "body"),
            (b"null", "body"),
            (b"[]", "body"),
            (b"\xff", "body"),
            (br#"{"from":"a","to":"b"}"#, "body"),
            (br#"{"from":"a","to":"b","cents":1,"memo":"x"}"#, "body"),
            (br#"{"from":"a","to":"b","cents":-1}"#, "body"),
            (br#"{"from":"a","to":"b","cents":1.5}"#, "body"),
            (br#"{"from":"a","to":"b","cents":"1"}"#, "body"),
            (br#"{"from":"a","to":"b","cents":1e3}"#, "body"),
            (
                br#"{"from":"a","to":"b","cents":99999999999999999999999}"#,
                "body",
            ),
            (br#"{"from":"","to":"b","cents":1}"#, "from"),
            (br#"{"from":"a b","to":"b","cents":1}"#, "from"),
            (r#"{"from":"a","to":"ü","cents":1}"#.as_bytes(), "to"),
            (br#"{"from":"a","to":"a","cents":1}"#, "to"),
            (br#"{"from":"a","to":"b","cents":0}"#, "cents"),
            (br#"{"from":"a","to":"b","cents":1000000001}"#, "cents"),
        ] {
            let refused = Payment::parse(body).unwrap_err();
            assert_eq!(refused.input, input, "{}", String::from_utf8_lossy(body));
        }
        let body = format!(r#"{{"from":"{long}","to":"b","cents":1}}"#);
        assert_eq!(Payment::parse(body.as_bytes()).unwrap_err().input, "from");
    }
}
