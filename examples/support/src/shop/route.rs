//! The shop's routes: their templates, methods and what each reads.

/// The shop's routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Route {
    /// `POST /buy/{sku}`.
    Buy,
    /// `GET /stock/{sku}`.
    Stock,
    /// `POST /reservations/{sku}?ttl_ms=N`.
    Reserve,
    /// `POST /reservations/{sku}/confirm`.
    Confirm,
}

impl Route {
    /// Every route.
    pub const ALL: [Self; 4] = [Self::Buy, Self::Stock, Self::Reserve, Self::Confirm];

    /// The route template, with the SKU as `{sku}`.
    #[must_use]
    pub const fn template(self) -> &'static str {
        match self {
            Self::Buy => "/buy/{sku}",
            Self::Stock => "/stock/{sku}",
            Self::Reserve => "/reservations/{sku}",
            Self::Confirm => "/reservations/{sku}/confirm",
        }
    }

    /// `GET` or `POST`.
    #[must_use]
    pub const fn method(self) -> &'static str {
        match self {
            Self::Stock => "GET",
            Self::Buy | Self::Reserve | Self::Confirm => "POST",
        }
    }

    pub(super) const fn takes_order(self) -> bool {
        !matches!(self, Self::Stock)
    }

    pub(super) const fn query_params(self) -> &'static [&'static str] {
        match self {
            Self::Reserve => &["ttl_ms"],
            Self::Buy | Self::Stock | Self::Confirm => &[],
        }
    }
}
