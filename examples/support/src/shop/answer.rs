//! What a buy answers over HTTP, decided once for both frameworks.

use std::time::Duration;

use lock_core::http::keyed::KeyedLockOptions;
use lock_core::http::{problem_body, Rejection, PROBLEM_JSON};
use lock_core::stock::StockLevel;
use lock_core::LockError;
use serde_json::json;

use crate::answer::HttpAnswer;

/// The outcome of one buy (or reservation step).
#[derive(Debug)]
pub enum BuyOutcome {
    /// Sold (now, or earlier to the same order id when `duplicate`).
    Sold {
        /// Units left.
        remaining: u64,
        /// The order id had bought before; nothing was deducted now.
        duplicate: bool,
        /// The fencing token the sale was written with (lock strategy).
        fence: Option<u64>,
        /// How long the lock had been held when the sale was written (lock strategy).
        held: Option<Duration>,
    },
    /// Held for the order (reservation endpoint).
    Reserved {
        /// Units left.
        remaining: u64,
    },
    /// Nothing left.
    OutOfStock {
        /// Units available.
        available: u64,
        /// How long the lock had been held (lock strategy).
        held: Option<Duration>,
    },
    /// Refused by the store (an expired or unknown reservation).
    Refused(&'static str),
    /// The write carried an older fencing token than one already written: this holder's
    /// lock was lost, nothing was sold.
    StaleFence {
        /// This request's token.
        fence: u64,
        /// The largest token written.
        last: u64,
    },
    /// The store failed; nothing is known to be sold.
    Failed(LockError),
}

/// An HTTP answer: status, content type, body and `Retry-After`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// `application/json` or `application/problem+json`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// `Retry-After` seconds.
    pub retry_after: Option<u64>,
}

impl From<Answer> for HttpAnswer {
    /// The answer, its `Retry-After` a header.
    fn from(answer: Answer) -> Self {
        Self {
            status: answer.status,
            content_type: answer.content_type,
            body: answer.body,
            headers: answer
                .retry_after
                .map(|secs| ("retry-after", secs.to_string()))
                .into_iter()
                .collect(),
        }
    }
}

/// The problem type of an out-of-stock answer.
pub const OUT_OF_STOCK: &str = "urn:flash-sale:out-of-stock";

fn micros(held: Option<Duration>) -> Option<u64> {
    held.map(|d| d.as_micros() as u64)
}

impl BuyOutcome {
    /// The HTTP answer for `order` buying `sku`.
    #[must_use]
    pub fn answer(&self, sku: &str, order: &str) -> Answer {
        let problem =
            |status, type_uri: &str, title, detail: String, extra: &[(&str, &str)]| Answer {
                status,
                content_type: PROBLEM_JSON,
                body: problem_body(type_uri, title, status, &detail, extra),
                retry_after: None,
            };
        match self {
            Self::Sold {
                remaining,
                duplicate,
                fence,
                held,
            } => Answer {
                status: 200,
                content_type: "application/json",
                body: json!({
                    "sku": sku, "order_id": order, "remaining": remaining,
                    "duplicate": duplicate, "fence": fence, "held_us": micros(*held),
                })
                .to_string()
                .into_bytes(),
                retry_after: None,
            },
            Self::Reserved { remaining } => Answer {
                status: 200,
                content_type: "application/json",
                body:
                    json!({"sku": sku, "order_id": order, "reserved": true, "remaining": remaining})
                        .to_string()
                        .into_bytes(),
                retry_after: None,
            },
            Self::OutOfStock { available, held } => {
                let held = micros(*held).map(|us| us.to_string());
                let mut extra = vec![("sku", sku)];
                if let Some(held) = &held {
                    extra.push(("held_us", held.as_str()));
                }
                problem(
                    409,
                    OUT_OF_STOCK,
                    "Out of stock",
                    format!("{available} available"),
                    &extra,
                )
            }
            Self::Refused(reason) => problem(
                409,
                "urn:flash-sale:refused",
                "Refused",
                (*reason).to_owned(),
                &[],
            ),
            Self::StaleFence { fence, last } => {
                let mut answer = problem(
                    503,
                    "urn:flash-sale:stale-fence",
                    "Lock lost before the write",
                    format!("fencing token {fence} is older than {last}; nothing was sold"),
                    &[],
                );
                answer.retry_after = Some(1);
                answer
            }
            Self::Failed(error) => {
                // The same mapping as the middleware: unreachable store → 503, fail closed.
                let rejection = Rejection::from_error(error, &KeyedLockOptions::new());
                Answer {
                    status: rejection.response.status,
                    content_type: PROBLEM_JSON,
                    retry_after: rejection.retry_after(),
                    body: rejection.response.body,
                }
            }
        }
    }
}

/// What a SQL stock had to do again in this process (`GET /stock/{sku}` adds it): lost
/// optimistic tries, and transactions the database aborted as deadlock or serialization
/// victims.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retried {
    /// Optimistic tries lost to another buyer.
    pub retries: u64,
    /// Deadlock or serialization victims, run again.
    pub conflicts: u64,
}

/// The answer to `GET /stock/{sku}`: the level as JSON (with what a SQL stock retried, when
/// it is one), or the store's failure.
#[must_use]
pub fn level_answer(level: Result<StockLevel, LockError>, retried: Option<Retried>) -> Answer {
    match level {
        Ok(level) => {
            let mut body = json!({
                "available": level.available, "reserved": level.reserved,
                "sold": level.sold, "received": level.received,
                "balanced": level.is_balanced(),
            });
            if let Some(retried) = retried {
                body["retries"] = json!(retried.retries);
                body["conflicts"] = json!(retried.conflicts);
            }
            Answer {
                status: 200,
                content_type: "application/json",
                body: body.to_string().into_bytes(),
                retry_after: None,
            }
        }
        Err(error) => BuyOutcome::Failed(error).answer("", ""),
    }
}
