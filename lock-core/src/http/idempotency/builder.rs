//! The rule methods of the adapters' builders (`lock-tower`'s `IdempotencyLayerBuilder`,
//! `lock-actix`'s `IdempotentBuilder`), written once: each forwards to
//! [`IdempotencyRules`](super::IdempotencyRules), so the builders take the same settings with
//! the same docs, callable without importing a trait.

/// Expands, inside an `impl` block of a builder that keeps an
/// [`IdempotencyRules`](crate::http::idempotency::IdempotencyRules) in its field `$rules`,
/// to the documented builder methods that forward to it (`header`, `optional`, `methods`,
/// `max_key_len`, `fingerprint_header`, `max_body_bytes`, `in_flight`, `retry_after`,
/// `store_status`, and `rules`, which replaces them all). `$what` names the adapter in the
/// docs (`"layer"`, `"middleware"`).
///
/// Not a public API: the adapters' plumbing, changed with them in any release.
#[doc(hidden)]
#[macro_export]
macro_rules! __idempotency_rule_methods {
    ($rules:ident, $what:literal) => {
        /// Reads the key from this header instead of `Idempotency-Key`.
        pub fn header(mut self, name: impl ::std::convert::Into<::std::string::String>) -> Self {
            self.$rules = self.$rules.header(name);
            self
        }

        /// Requests without a key run as they are, without idempotency (default: 400).
        pub fn optional(mut self) -> Self {
            self.$rules = self.$rules.optional();
            self
        }

        /// The methods handled (default `POST` and `PATCH`); other requests pass untouched.
        pub fn methods<I, S>(mut self, methods: I) -> Self
        where
            I: ::std::iter::IntoIterator<Item = S>,
            S: ::std::convert::Into<::std::string::String>,
        {
            self.$rules = self.$rules.methods(methods);
            self
        }

        /// The longest key accepted (default 255; at most 400).
        pub fn max_key_len(mut self, limit: usize) -> Self {
            self.$rules = self.$rules.max_key_len(limit);
            self
        }

        /// Adds a request header to the fingerprint (a key reused with another value of it
        /// gets 422).
        pub fn fingerprint_header(
            mut self,
            name: impl ::std::convert::Into<::std::string::String>,
        ) -> Self {
            self.$rules = self.$rules.fingerprint_header(name);
            self
        }

        /// The largest request body (larger: 413, nothing runs) and response body kept
        /// (larger: replaced by a kept 500 problem). Default 1 MiB.
        pub fn max_body_bytes(mut self, limit: usize) -> Self {
            self.$rules = self.$rules.max_body_bytes(limit);
            self
        }

        /// What a duplicate does while the first request runs (default: 409 at once).
        pub fn in_flight(mut self, policy: $crate::idempotency::InFlight) -> Self {
            self.$rules = self.$rules.in_flight(policy);
            self
        }

        /// The `Retry-After` of 409 and 503 answers (default 1 s).
        pub fn retry_after(mut self, after: ::std::time::Duration) -> Self {
            self.$rules = self.$rules.retry_after(after);
            self
        }

        /// Which response statuses are kept and replayed (default
        /// [`default_store_status`](lock_core::http::idempotency::default_store_status)).
        pub fn store_status(mut self, keep: fn(u16) -> bool) -> Self {
            self.$rules = self.$rules.store_status(keep);
            self
        }

        /// Replaces every rule at once (rules shared with another
        #[doc = concat!($what, ", say).")]
        pub fn rules(mut self, rules: $crate::http::idempotency::IdempotencyRules) -> Self {
            self.$rules = rules;
            self
        }
    };
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::http::idempotency::IdempotencyRules;
    use crate::idempotency::InFlight;

    /// A builder as the adapters write one.
    struct Builder {
        rules: IdempotencyRules,
    }

    // The methods are `pub`, as on the adapters' public builders.
    #[allow(unreachable_pub)]
    impl Builder {
        crate::__idempotency_rule_methods!(rules, "layer");
    }

    #[test]
    fn the_methods_forward_to_the_rules() {
        let built = Builder {
            rules: IdempotencyRules::new(),
        }
        .header("X-Key")
        .optional()
        .methods(["put"])
        .max_key_len(40)
        .fingerprint_header("Content-Type")
        .max_body_bytes(10)
        .in_flight(InFlight::Wait(Duration::from_secs(2)))
        .retry_after(Duration::from_secs(3))
        .store_status(|status| status == 201);
        let rules = built.rules.validate().unwrap();
        assert_eq!(rules.max_body_bytes_limit(), 10);
        assert!(rules.should_store(201) && !rules.should_store(200));
        let debug = format!("{rules:?}");
        for part in ["x-key", "required: false", "PUT", "40", "content-type"] {
            assert!(debug.contains(part), "{part} not in {debug}");
        }
        let replaced = Builder {
            rules: IdempotencyRules::new(),
        }
        .max_key_len(0)
        .rules(IdempotencyRules::new());
        assert!(replaced.rules.validate().is_ok());
    }
}
