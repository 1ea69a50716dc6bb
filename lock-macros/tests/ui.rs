//! Compile-time behaviour of `#[distributed_lock]` and `#[single_flight]`: what compiles (and
//! runs), and the diagnostic each mistake gets. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite` and read them: each must show one clear error.
//!
//! The READMEs' examples, `#[single_flight]` ones included, are compiled as doctests by the
//! `readme-check` crate (`xtask/readme-check`).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/single_flight/pass/*.rs");
    cases.compile_fail("tests/ui/single_flight/fail/*.rs");
}
