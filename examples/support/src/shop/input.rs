//! A shop request's input, checked once for both apps before anything runs.

use std::time::Duration;

use lock_core::http::{decode_path_segment, decode_query_component};

use super::{check_order_id, check_sku, generated_order_id, parse_ttl_ms, BadInput, Route};

/// What the request body turned out to be; the apps read it with their framework.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestBody {
    /// No body, or an empty one.
    Empty,
    /// At least one byte.
    NotEmpty,
    /// The body could not be read (a malformed chunked encoding): the error.
    Unreadable(String),
}

/// A request as sent, in the parts the shop reads; each app fills it from its framework's
/// request, before any of the framework's own (possibly lenient) decoding.
#[derive(Clone, Debug)]
pub struct RawRequest<'a> {
    /// The path as sent, still percent-encoded, without the query.
    pub path: &'a str,
    /// The raw query string after `?`, if any.
    pub query: Option<&'a str>,
    /// Every `Order-Id` header value, raw bytes, in order.
    pub order_ids: Vec<&'a [u8]>,
    /// The body.
    pub body: RequestBody,
}

/// A request's input, checked: what the shop acts on. Both apps check it before anything
/// runs (before the lock strategy's middleware takes its lock), so every strategy and both
/// frameworks refuse the same input with the same 400 `application/problem+json` answer:
///
/// | input                                   | allowed                                                                   |
/// |-----------------------------------------|---------------------------------------------------------------------------|
/// | `{sku}` path parameter                  | 1..=[`MAX_SKU_LEN`](super::MAX_SKU_LEN) bytes of UTF-8 after percent-decoding, no control characters |
/// | `Order-Id` header (buy, reserve, confirm) | at most one; 1..=[`MAX_ORDER_ID_LEN`](super::MAX_ORDER_ID_LEN) bytes of UTF-8, no control characters; absent: one is generated |
/// | `ttl_ms` query parameter (reserve only) | decimal digits, [`MIN_TTL_MS`](super::MIN_TTL_MS)..=[`MAX_TTL_MS`](super::MAX_TTL_MS); absent: `--reservation-ms` |
/// | any other query parameter               | none                                                                      |
/// | body                                    | none (an order id sent in a body would otherwise be ignored)              |
///
/// ```
/// use example_support::shop::{RawRequest, RequestBody, Route, ShopInput};
///
/// let request = RawRequest {
///     path: "/reservations/caf%C3%A9",
///     query: Some("ttl_ms=250"),
///     order_ids: vec![b"order-1".as_slice()],
///     body: RequestBody::Empty,
/// };
/// let input = ShopInput::parse(Route::Reserve, &request).unwrap();
/// assert_eq!((input.sku(), input.order_id()), ("café", Some("order-1")));
/// assert_eq!(input.ttl(), Some(std::time::Duration::from_millis(250)));
///
/// let bad = ShopInput::parse(Route::Reserve, &RawRequest { query: Some("ttl_ms=0"), ..request });
/// let answer = bad.unwrap_err().answer();
/// assert_eq!((answer.status, answer.content_type), (400, "application/problem+json"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShopInput {
    route: Route,
    sku: String,
    order_id: Option<String>,
    ttl: Option<Duration>,
}

impl ShopInput {
    /// Checks `request` to `route` against the rules in the table above, in the order
    /// SKU, query, `Order-Id`, body.
    pub fn parse(route: Route, request: &RawRequest<'_>) -> Result<Self, BadInput> {
        let sku = parse_sku(route, request.path)?;
        let ttl = parse_query(route, request.query)?;
        let order_id = route
            .takes_order()
            .then(|| parse_order_id(&request.order_ids))
            .transpose()?;
        match &request.body {
            RequestBody::Empty => {}
            RequestBody::NotEmpty => return Err(BadInput::body("has content".into())),
            RequestBody::Unreadable(error) => {
                return Err(BadInput::body(format!("could not be read: {error}")))
            }
        }
        Ok(Self {
            route,
            sku,
            order_id,
            ttl,
        })
    }

    /// The route.
    #[must_use]
    pub fn route(&self) -> Route {
        self.route
    }

    /// The SKU, decoded.
    #[must_use]
    pub fn sku(&self) -> &str {
        &self.sku
    }

    /// The order id (the header's, else a generated one); `None` on `GET /stock`.
    #[must_use]
    pub fn order_id(&self) -> Option<&str> {
        self.order_id.as_deref()
    }

    /// The reservation TTL asked for with `ttl_ms`, if any.
    #[must_use]
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }
}

fn parse_sku(route: Route, path: &str) -> Result<String, BadInput> {
    let index = route
        .template()
        .split('/')
        .position(|segment| segment == "{sku}")
        .unwrap_or(2);
    let raw = path
        .split('/')
        .nth(index)
        .ok_or_else(|| BadInput::sku("is missing".into()))?;
    let sku = decode_path_segment(raw).map_err(|e| BadInput::sku(e.to_string()))?;
    check_sku(&sku)?;
    Ok(sku)
}

fn parse_order_id(values: &[&[u8]]) -> Result<String, BadInput> {
    match values {
        [] => Ok(generated_order_id()),
        [value] => {
            let order = std::str::from_utf8(value)
                .map_err(|_| BadInput::order_id("is not UTF-8".into()))?;
            check_order_id(order)?;
            Ok(order.to_owned())
        }
        several => Err(BadInput::order_id(format!(
            "was sent {} times",
            several.len()
        ))),
    }
}

/// The query's `ttl_ms`, if given; refuses every parameter `route` does not take.
fn parse_query(route: Route, query: Option<&str>) -> Result<Option<Duration>, BadInput> {
    let mut ttl = None;
    for pair in query.unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (name, value) = match pair.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (pair, None),
        };
        let name = decode_query_component(name)
            .map_err(|e| BadInput::query(route, format!("has a parameter name that {e}")))?;
        if !route.query_params().contains(&name.as_str()) {
            let shown: String = name.chars().take(64).collect();
            return Err(BadInput::query(
                route,
                format!("has the unknown parameter {shown:?}"),
            ));
        }
        // `ttl_ms` is the only parameter any route takes.
        if ttl.is_some() {
            return Err(BadInput::ttl("is given more than once".into()));
        }
        let value = value.ok_or_else(|| BadInput::ttl("has no value".into()))?;
        let value = decode_query_component(value).map_err(|e| BadInput::ttl(e.to_string()))?;
        ttl = Some(parse_ttl_ms(&value)?);
    }
    Ok(ttl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shop::{MAX_ORDER_ID_LEN, MAX_SKU_LEN};

    fn request(path: &'static str, query: Option<&'static str>) -> RawRequest<'static> {
        RawRequest {
            path,
            query,
            order_ids: Vec::new(),
            body: RequestBody::Empty,
        }
    }

    fn refused(route: Route, request: &RawRequest<'_>) -> &'static str {
        ShopInput::parse(route, request).unwrap_err().input
    }

    #[test]
    fn the_sku_is_taken_from_its_segment_on_every_route() {
        for (route, path) in [
            (Route::Buy, "/buy/a%20b"),
            (Route::Stock, "/stock/a%20b"),
            (Route::Reserve, "/reservations/a%20b"),
            (Route::Confirm, "/reservations/a%20b/confirm"),
        ] {
            let input = ShopInput::parse(route, &request(path, None)).unwrap();
            assert_eq!(input.sku(), "a b", "{route:?}");
            assert_eq!(input.order_id().is_some(), route != Route::Stock);
        }
        assert_eq!(
            refused(Route::Confirm, &request("/reservations", None)),
            "sku"
        );
    }

    #[test]
    fn skus_are_decoded_strictly_and_limited() {
        for path in ["/buy/%FF", "/buy/a%zz", "/buy/", "/buy/a%00", "/buy/%C2%85"] {
            assert_eq!(refused(Route::Buy, &request(path, None)), "sku", "{path}");
        }
        let longest = format!("/buy/{}", "é".repeat(MAX_SKU_LEN / 2));
        assert!(ShopInput::parse(Route::Buy, &request(longest.leak(), None)).is_ok());
        let over = format!("/buy/{}", "%C3%A9".repeat(MAX_SKU_LEN / 2) + "x");
        assert_eq!(refused(Route::Buy, &request(over.leak(), None)), "sku");
    }

    #[test]
    fn order_ids_one_header_of_text() {
        let with = |ids: Vec<&'static [u8]>| RawRequest {
            order_ids: ids,
            ..request("/buy/x", None)
        };
        let input = ShopInput::parse(Route::Buy, &with(vec![b"o-1"])).unwrap();
        assert_eq!(input.order_id(), Some("o-1"));
        let generated = ShopInput::parse(Route::Buy, &with(vec![])).unwrap();
        assert!(generated.order_id().unwrap().starts_with("gen-"));
        let long: &'static [u8] = vec![b'o'; MAX_ORDER_ID_LEN + 1].leak();
        for ids in [
            vec![b"".as_slice()],
            vec![b"\xff"],
            vec![b"a\tb"],
            vec![long],
        ] {
            assert_eq!(
                refused(Route::Buy, &with(ids.clone())),
                "Order-Id",
                "{ids:?}"
            );
        }
        assert_eq!(refused(Route::Buy, &with(vec![b"a", b"a"])), "Order-Id");
        // GET /stock reads no order id, so it does not judge one.
        assert!(ShopInput::parse(Route::Stock, &with(vec![b"\xff"])).is_ok());
    }

    #[test]
    fn query_parameters_are_known_and_ttl_in_range() {
        let reserve = |q| ShopInput::parse(Route::Reserve, &request("/reservations/x", Some(q)));
        assert_eq!(
            reserve("ttl_ms=30").unwrap().ttl(),
            Some(Duration::from_millis(30))
        );
        assert_eq!(
            reserve("&&ttl_ms=%33%30&").unwrap().ttl(),
            Some(Duration::from_millis(30))
        );
        assert_eq!(reserve("").unwrap().ttl(), None);
        for q in [
            "ttl_ms=29",
            "ttl_ms",
            "ttl_ms=+1",
            "ttl_ms=1&ttl_ms=1",
            "ttl_ms=%FF",
        ] {
            assert_eq!(reserve(q).unwrap_err().input, "ttl_ms", "{q}");
        }
        for q in ["ttl=5", "%FF=1", "x"] {
            assert_eq!(reserve(q).unwrap_err().input, "query", "{q}");
        }
        let buy = ShopInput::parse(Route::Buy, &request("/buy/x", Some("ttl_ms=100")));
        assert_eq!(
            buy.unwrap_err().allowed,
            "no query parameters on this route"
        );
    }

    #[test]
    fn bodies_are_refused() {
        for body in [
            RequestBody::NotEmpty,
            RequestBody::Unreadable("bad chunk".into()),
        ] {
            let request = RawRequest {
                body,
                ..request("/buy/x", None)
            };
            assert_eq!(refused(Route::Buy, &request), "body");
        }
    }
}
