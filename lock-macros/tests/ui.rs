//! Compile-time behaviour of `#[distributed_lock]`: what compiles (and runs), and the
//! diagnostic each mistake gets. Regenerate the `.stderr` files with `TRYBUILD=overwrite`
//! and read them: each must show one clear error.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
