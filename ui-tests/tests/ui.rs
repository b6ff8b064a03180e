//! The compile-time behaviour of timebox's macros: what each accepts, and the
//! error it gives for each mistake. Re-bless with `TRYBUILD=overwrite`.

/// `#[sim_test]`. Its pass fixtures only show that a form is accepted (the
/// `#[test]` it emits is compiled out of a fixture built without `--test`);
/// `tests/sim.rs` compiles and runs the same forms.
#[test]
fn sim_test_fixtures() {
    let t = trybuild::TestCases::new();
    t.pass("ui/sim_test/pass/*.rs");
    t.compile_fail("ui/sim_test/fail/*.rs");
}

/// The route attributes (`#[get]`, `#[post]`, ..): every key combination on
/// every method, the ways a handler mounts, and the error for each mistake.
#[test]
fn route_fixtures() {
    let t = trybuild::TestCases::new();
    t.pass("ui/route/pass/*.rs");
    t.compile_fail("ui/route/fail/*.rs");
}
