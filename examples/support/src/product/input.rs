//! What a product request may carry, checked on the request as sent (the raw path, before any
//! percent-decoding), once for both frameworks.

use std::fmt;

/// The longest product id.
pub const MAX_ID_LEN: usize = 64;

/// The problem type of a 400 answer.
pub const BAD_INPUT: &str = "urn:stampede:bad-input";

/// The two routes of the product service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductRoute {
    /// `GET /products/{id}`.
    Product,
    /// `GET /stats`.
    Stats,
}

impl ProductRoute {
    /// Both routes.
    pub const ALL: [Self; 2] = [Self::Product, Self::Stats];

    /// The route template, in the syntax both axum 0.8 and actix-web use.
    #[must_use]
    pub const fn template(self) -> &'static str {
        match self {
            Self::Product => "/products/{id}",
            Self::Stats => "/stats",
        }
    }
}

/// A product id that passed [`ProductId::parse`]: 1–[`MAX_ID_LEN`] ASCII letters, digits
/// or `-`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProductId(String);

impl ProductId {
    /// Checks `raw` (a path segment as sent).
    pub fn parse(raw: &str) -> Result<Self, BadInput> {
        let bad = |why: &str| BadInput {
            input: "id",
            detail: format!(
                "the product id must be 1–{MAX_ID_LEN} ASCII letters, digits or '-' ({why})"
            ),
        };
        if raw.is_empty() {
            return Err(bad("it is empty"));
        }
        if raw.len() > MAX_ID_LEN {
            return Err(bad(&format!("it is {} bytes long", raw.len())));
        }
        if let Some(c) = raw
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
        {
            return Err(bad(&format!("it contains {c:?}")));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The id.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProductId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A checked request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProductRequest {
    /// `GET /products/{id}`.
    Product(ProductId),
    /// `GET /stats`.
    Stats,
}

impl ProductRequest {
    /// Checks a request routed to `route`, from its raw path and query: the id's rules, and
    /// no query string (neither route reads one, and the cache key would ignore it).
    pub fn parse(route: ProductRoute, path: &str, query: Option<&str>) -> Result<Self, BadInput> {
        if let Some(query) = query {
            return Err(BadInput {
                input: "query",
                detail: format!("{} takes no query string, got {query:?}", route.template()),
            });
        }
        match route {
            ProductRoute::Stats => Ok(Self::Stats),
            ProductRoute::Product => {
                let raw = path.strip_prefix("/products/").unwrap_or_default();
                ProductId::parse(raw).map(Self::Product)
            }
        }
    }
}

/// Input a request may not carry: answered 400 before the cache or the origin is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput {
    /// Which input: `id` or `query`.
    pub input: &'static str,
    /// What is wrong and what is allowed.
    pub detail: String,
}

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.input, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(path: &str, query: Option<&str>) -> Result<ProductRequest, BadInput> {
        ProductRequest::parse(ProductRoute::Product, path, query)
    }

    #[test]
    fn ids_of_letters_digits_and_dashes_up_to_64_pass() {
        for id in ["1", "lamp-42", "ABC-def-0", &"a".repeat(MAX_ID_LEN)] {
            let want = ProductRequest::Product(ProductId(id.to_owned()));
            assert_eq!(product(&format!("/products/{id}"), None), Ok(want));
        }
    }

    #[test]
    fn anything_else_is_bad_input_naming_what_is_wrong() {
        let long = "a".repeat(MAX_ID_LEN + 1);
        for id in [
            "",
            "a_b",
            "a.b",
            "a%2Fb",
            "caf%C3%A9",
            "café",
            "a b",
            "%41",
            "a+b",
            &long,
        ] {
            let bad = product(&format!("/products/{id}"), None).unwrap_err();
            assert_eq!(bad.input, "id", "{id:?}");
        }
        let bad = product("/products/1", Some("fresh=1")).unwrap_err();
        assert_eq!(bad.input, "query");
        assert!(ProductRequest::parse(ProductRoute::Stats, "/stats", Some("")).is_err());
        assert_eq!(
            ProductRequest::parse(ProductRoute::Stats, "/stats", None),
            Ok(ProductRequest::Stats)
        );
    }
}
