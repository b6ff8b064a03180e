// trybuild builds this as a binary, without `--test`, so the `#[test]` the
// macro emits (and with it every use of these imports) is compiled out: this
// fixture checks that the attribute is accepted, and `tests/sim.rs` runs the
// same forms as tests.
#![allow(unused_imports)]

use timebox::sim::Sim;

/// A failing simulation test, kept as a test that must panic.
#[timebox::sim_test(seed = 7)]
#[should_panic(expected = "seed 7")]
async fn with_other_attributes(sim: Sim) {
    panic!("seed {}", sim.seed());
}

fn main() {}
