//! The bad-input table both example apps' tests run: every class of malformed client input
//! (length limits, encodings, control characters, numbers out of range, empty values, NUL
//! bytes, header values that are not UTF-8, unknown query parameters, malformed bodies) must
//! answer 400 with an `application/problem+json` body naming the input, never a 5xx, and the
//! good inputs beside them must still sell.
//!
//! Requests go over a raw TCP connection, byte for byte, so the table can send what HTTP
//! client libraries refuse to build (bytes that are not UTF-8 in a header, a broken chunked
//! body).

mod raw;
mod table;

pub use raw::{send, RawReply};
pub use table::rows;

use example_support::shop::{Shop, MAX_SKU_LEN};

/// What a row must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// 200: the good input still sells (or reads).
    Ok,
    /// Any answer that is neither 400 nor 5xx (a 409 out of stock or refused is fine).
    Served,
    /// 400 `application/problem+json` whose `input` member names this input.
    Bad(&'static str),
    /// Any 4xx: the HTTP parser itself refuses the request before the app sees it.
    Refused,
    /// Any answer but a 5xx: where the frameworks' parsers differ (hyper takes raw UTF-8 in
    /// the request target, as the same SKU as its percent-encoded form; actix refuses it).
    Handled,
    /// Exactly this status (404 for a route that does not match).
    Status(u16),
}

/// One request of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// What the row is about, for failure messages.
    pub name: String,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The request target as sent, byte for byte: path and query.
    pub target: Vec<u8>,
    /// Extra header lines, raw bytes (`Content-Length: 0` is added to a `POST` without a
    /// body or a `Transfer-Encoding`).
    pub headers: Vec<(&'static str, Vec<u8>)>,
    /// The body bytes as sent (framed by the row's own headers).
    pub body: Vec<u8>,
    /// Send the body 50 ms after the head, so the app is already running when it arrives.
    pub late_body: bool,
    /// What it must answer.
    pub expect: Expect,
}

/// The SKUs [`seed`] stocks, for the rows whose good input must sell.
#[must_use]
pub fn seeded_skus() -> Vec<String> {
    vec!["sku-ok".into(), "café".into(), "s".repeat(MAX_SKU_LEN)]
}

/// Stocks [`seeded_skus`] on `shop` with enough units for the table.
pub async fn seed(shop: &Shop) -> Result<(), String> {
    for sku in seeded_skus() {
        shop.restock(&sku, 1_000)
            .await
            .map_err(|e| format!("seeding {sku:?}: {e}"))?;
    }
    Ok(())
}

/// Why a reply does not meet its row's expectation, if it does not.
#[must_use]
pub fn judge(expect: Expect, reply: &RawReply) -> Option<String> {
    let status = reply.status;
    let body = String::from_utf8_lossy(&reply.body);
    let problem: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let fault = match expect {
        _ if status == 0 => Some("no answer".to_owned()),
        _ if status >= 500 => Some(format!("a {status}")),
        Expect::Ok if status != 200 => Some(format!("{status} instead of 200")),
        Expect::Served if status == 400 => Some("a 400 for good input".to_owned()),
        Expect::Bad(_) if status != 400 => Some(format!("{status} instead of 400")),
        Expect::Bad(_) if reply.content_type != lock_core::http::PROBLEM_JSON => Some(format!(
            "a 400 of {:?} instead of problem+json",
            reply.content_type
        )),
        Expect::Bad(input) if problem["input"] != input || problem["status"] != 400 => Some(
            format!("a problem that does not name {input:?} with status 400"),
        ),
        Expect::Bad(_) if !problem["allowed"].is_string() => {
            Some("a problem that does not say what is allowed".to_owned())
        }
        Expect::Refused if !(400..500).contains(&status) => Some(format!("{status}, not a 4xx")),
        Expect::Status(want) if status != want => Some(format!("{status} instead of {want}")),
        _ => None,
    };
    fault.map(|fault| format!("{fault}: {}", body.chars().take(200).collect::<String>()))
}

/// Runs every row against the app at `base` (seeded with [`seed`]); `Err` lists each row
/// that answered wrong, and counts them by kind (5xx, no answer, accepted bad input, ...).
pub async fn check_all(base: &str) -> Result<usize, String> {
    let rows = rows();
    let mut failures = Vec::new();
    for row in &rows {
        let verdict = match send(base, row).await {
            Ok(reply) => judge(row.expect, &reply),
            Err(error) => Some(error),
        };
        if let Some(fault) = verdict {
            failures.push(format!(
                "{} ({} {}): {fault}",
                row.name,
                row.method,
                short(&String::from_utf8_lossy(&row.target))
            ));
        }
    }
    if failures.is_empty() {
        return Ok(rows.len());
    }
    Err(format!(
        "{} of {} rows answered wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    ))
}

fn short(target: &str) -> String {
    if target.len() <= 60 {
        target.to_owned()
    } else {
        let start: String = target.chars().take(40).collect();
        format!("{start}…({} bytes)", target.len())
    }
}
