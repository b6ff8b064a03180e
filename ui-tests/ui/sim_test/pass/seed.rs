// trybuild builds this as a binary, without `--test`, so the `#[test]` the
// macro emits (and with it every use of these imports) is compiled out: this
// fixture checks that the attribute is accepted, and `tests/sim.rs` runs the
// same forms as tests.
#![allow(unused_imports)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 42)]
async fn decimal_seed(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

#[timebox::sim_test(seed = 0x2a)]
async fn hex_seed(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

#[timebox::sim_test(seed = 18_446_744_073_709_551_615u64)]
async fn largest_seed_with_u64_suffix(sim: Sim) {
    assert_eq!(sim.seed(), u64::MAX);
}

fn main() {}
