//! The compile-time behaviour of `#[sim_test]`: what it accepts, and the
//! error it gives for each mistake. Re-bless with `TRYBUILD=overwrite`.

#[test]
fn sim_test_fixtures() {
    let t = trybuild::TestCases::new();
    t.pass("ui/sim_test/pass/*.rs");
    t.compile_fail("ui/sim_test/fail/*.rs");
}
