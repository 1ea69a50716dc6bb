//! The rows: each class of bad input beside the good input it must not catch.

use example_support::shop::MAX_SKU_LEN;

use super::{Expect, Row};

fn row(name: impl Into<String>, method: &'static str, target: impl Into<Vec<u8>>) -> Row {
    Row {
        name: name.into(),
        method,
        target: target.into(),
        headers: Vec::new(),
        body: Vec::new(),
        late_body: false,
        expect: Expect::Ok,
    }
}

impl Row {
    fn header(mut self, name: &'static str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    fn late(mut self) -> Self {
        self.late_body = true;
        self
    }

    fn expect(mut self, expect: Expect) -> Self {
        self.expect = expect;
        self
    }
}

/// Every row: the bad inputs and the good ones next to them.
#[must_use]
pub fn rows() -> Vec<Row> {
    use Expect::{Bad, Handled, Refused, Served, Status};
    let buy = |name: &str, sku: &str| row(name, "POST", format!("/buy/{sku}"));
    let ordered = |name: &str, order: &[u8]| {
        row(name, "POST", "/buy/sku-ok").header("Order-Id", order.to_vec())
    };
    let ttl = |name: &str, value: &str| {
        row(name, "POST", format!("/reservations/sku-ok?ttl_ms={value}"))
            .header("Order-Id", format!("ttl-{name}"))
    };
    let longest = "s".repeat(MAX_SKU_LEN);
    let too_long = "s".repeat(MAX_SKU_LEN + 1);
    let mut rows = vec![
        // SKU: length limits, one limit for every strategy.
        buy("plain sku", "sku-ok"),
        buy("sku at the limit", &longest),
        buy("sku one byte over", &too_long).expect(Bad("sku")),
        buy(
            "sku of 508 bytes (fits the lock key with its prefix)",
            &"s".repeat(508),
        )
        .expect(Bad("sku")),
        buy("sku of 512 bytes (the lock key limit)", &"s".repeat(512)).expect(Bad("sku")),
        buy("sku of 513 bytes", &"s".repeat(513)).expect(Bad("sku")),
        buy("sku of 4 KiB", &"s".repeat(4096)).expect(Bad("sku")),
        // SKU: encodings.
        buy("percent-encoded UTF-8 sku", "caf%C3%A9"),
        buy("encoded slash in sku", "a%2Fb").expect(Served),
        buy("raw UTF-8 bytes in the path", "caf\u{e9}").expect(Handled),
        row("raw byte 0xFF in the path", "POST", b"/buy/a\xffb".to_vec()).expect(Refused),
        row(
            "raw byte 0xFF in the query",
            "GET",
            b"/stock/x?a=\xff".to_vec(),
        )
        .expect(Refused),
        buy("sku %FF", "%FF").expect(Bad("sku")),
        buy("sku truncated UTF-8", "caf%C3").expect(Bad("sku")),
        buy("sku overlong UTF-8", "%C0%AF").expect(Bad("sku")),
        buy("sku UTF-16 surrogate", "%ED%A0%80").expect(Bad("sku")),
        buy("sku bad escape", "a%zz").expect(Bad("sku")),
        buy("sku cut escape", "a%4").expect(Bad("sku")),
        buy("sku lone percent", "%").expect(Bad("sku")),
        // SKU: NUL and control characters.
        buy("sku NUL", "a%00b").expect(Bad("sku")),
        buy("sku only NUL", "%00").expect(Bad("sku")),
        buy("sku LF", "a%0Ab").expect(Bad("sku")),
        buy("sku CR", "a%0Db").expect(Bad("sku")),
        buy("sku TAB", "a%09b").expect(Bad("sku")),
        buy("sku ESC", "a%1Bb").expect(Bad("sku")),
        buy("sku DEL", "a%7Fb").expect(Bad("sku")),
        buy("sku C1 NEL", "a%C2%85b").expect(Bad("sku")),
        // SKU: empty.
        buy("no sku segment", "").expect(Status(404)),
        // The other routes decide the same way.
        row("stock of a good sku", "GET", "/stock/sku-ok"),
        row("stock of sku %FF", "GET", "/stock/%FF").expect(Bad("sku")),
        row("stock of a long sku", "GET", format!("/stock/{too_long}")).expect(Bad("sku")),
        row("stock of sku NUL", "GET", "/stock/%00").expect(Bad("sku")),
        row("reserve sku %FF", "POST", "/reservations/%FF").expect(Bad("sku")),
        row("confirm sku %FF", "POST", "/reservations/%FF/confirm").expect(Bad("sku")),
        row(
            "confirm unknown order",
            "POST",
            "/reservations/sku-ok/confirm",
        )
        .header("Order-Id", "never-reserved")
        .expect(Served),
        // Order-Id: lengths, encodings, control characters, empty, repeated.
        ordered("order id", b"order-1"),
        ordered("UTF-8 order id", "заказ-1".as_bytes()),
        ordered("order id at the limit", &[b'o'; 256]),
        ordered("order id one byte over", &[b'o'; 257]).expect(Bad("Order-Id")),
        ordered("order id of 8 KiB", &[b'o'; 8192]).expect(Bad("Order-Id")),
        ordered("empty order id", b"").expect(Bad("Order-Id")),
        ordered("order id not UTF-8", b"order-\xff\xfe").expect(Bad("Order-Id")),
        ordered("order id latin-1", b"caf\xe9").expect(Bad("Order-Id")),
        ordered("order id with TAB", b"a\tb").expect(Bad("Order-Id")),
        ordered("order id with C1 control", "a\u{85}b".as_bytes()).expect(Bad("Order-Id")),
        ordered("order id with NUL", b"a\0b").expect(Refused),
        ordered("order id with ESC", b"a\x1bb").expect(Refused),
        row("two different order ids", "POST", "/buy/sku-ok")
            .header("Order-Id", "a-1")
            .header("Order-Id", "a-2")
            .expect(Bad("Order-Id")),
        row("the same order id twice", "POST", "/buy/sku-ok")
            .header("Order-Id", "a-1")
            .header("Order-Id", "a-1")
            .expect(Bad("Order-Id")),
        row(
            "order id on reserve, too long",
            "POST",
            "/reservations/sku-ok",
        )
        .header("Order-Id", vec![b'o'; 8192])
        .expect(Bad("Order-Id")),
        row(
            "order id on confirm, empty",
            "POST",
            "/reservations/sku-ok/confirm",
        )
        .header("Order-Id", "")
        .expect(Bad("Order-Id")),
        // ttl_ms: range, syntax, empty, repeated.
        ttl("the shortest ttl", "30").expect(Served),
        ttl("the longest ttl", "86400000").expect(Served),
        ttl("percent-encoded digits", "%32%35%30").expect(Served),
        ttl("ttl zero", "0").expect(Bad("ttl_ms")),
        ttl("ttl under the minimum", "29").expect(Bad("ttl_ms")),
        ttl("ttl over the maximum", "86400001").expect(Bad("ttl_ms")),
        ttl("ttl 9e15", "9000000000000000").expect(Bad("ttl_ms")),
        ttl("ttl u64::MAX", "18446744073709551615").expect(Bad("ttl_ms")),
        ttl("ttl past u64", "18446744073709551616").expect(Bad("ttl_ms")),
        ttl("ttl negative", "-5").expect(Bad("ttl_ms")),
        ttl("ttl with plus sign", "%2B250").expect(Bad("ttl_ms")),
        ttl("ttl exponent", "1e30").expect(Bad("ttl_ms")),
        ttl("ttl fraction", "1.5").expect(Bad("ttl_ms")),
        ttl("ttl with unit", "250ms").expect(Bad("ttl_ms")),
        ttl("ttl with space", "%20250").expect(Bad("ttl_ms")),
        ttl("ttl hex", "0x10").expect(Bad("ttl_ms")),
        ttl("ttl empty", "").expect(Bad("ttl_ms")),
        ttl("ttl NUL", "25%000").expect(Bad("ttl_ms")),
        ttl("ttl not UTF-8", "%FF").expect(Bad("ttl_ms")),
        ttl("ttl repeated", "250&ttl_ms=250").expect(Bad("ttl_ms")),
        ttl("ttl conflicting", "250&ttl_ms=60000").expect(Bad("ttl_ms")),
        row("ttl without a value", "POST", "/reservations/sku-ok?ttl_ms")
            .header("Order-Id", "ttl-bare")
            .expect(Bad("ttl_ms")),
        row("no ttl: the default", "POST", "/reservations/sku-ok")
            .header("Order-Id", "ttl-default")
            .expect(Served),
        // Unknown or odd query parameters.
        row(
            "unknown parameter on reserve",
            "POST",
            "/reservations/sku-ok?ttl=500",
        )
        .expect(Bad("query")),
        row("unknown parameter on buy", "POST", "/buy/sku-ok?foo=1").expect(Bad("query")),
        row("ttl_ms on buy", "POST", "/buy/sku-ok?ttl_ms=500").expect(Bad("query")),
        row("unknown parameter on stock", "GET", "/stock/sku-ok?x").expect(Bad("query")),
        row("parameter name not UTF-8", "GET", "/stock/sku-ok?%FF=1").expect(Bad("query")),
        row("empty query", "POST", "/buy/sku-ok?"),
        row("empty pairs", "POST", "/buy/sku-ok?&&"),
        // Bodies: the routes take none.
        row("empty chunked body", "POST", "/buy/sku-ok")
            .header("Transfer-Encoding", "chunked")
            .body("0\r\n\r\n"),
        row("invalid chunked body", "POST", "/buy/sku-ok")
            .header("Transfer-Encoding", "chunked")
            .body("zz\r\nhello\r\n0\r\n\r\n")
            .expect(Bad("body")),
        row("invalid chunked body, sent late", "POST", "/buy/sku-ok")
            .header("Transfer-Encoding", "chunked")
            .body("zz\r\nhello\r\n0\r\n\r\n")
            .late()
            .expect(Bad("body")),
        row("a JSON body", "POST", "/buy/sku-ok")
            .header("Content-Type", "application/json")
            .header("Content-Length", "26")
            .body(r#"{"order_id":"in-the-body"}"#)
            .expect(Bad("body")),
        row("a chunked body with data", "POST", "/buy/sku-ok")
            .header("Transfer-Encoding", "chunked")
            .body("2\r\n{}\r\n0\r\n\r\n")
            .expect(Bad("body")),
    ];
    for (index, row) in rows.iter_mut().enumerate() {
        if row.method == "POST" && !row.headers.iter().any(|(n, _)| n.starts_with("Order-Id")) {
            // A fresh order per row, so rows that sell do not answer each other's sales.
            row.headers
                .push(("Order-Id", format!("row-{index}").into_bytes()));
        }
    }
    rows
}
