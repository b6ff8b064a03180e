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

/// One seed, as `seeds = 1` says it, may be kept as a test that must panic.
#[timebox::sim_test(seeds = 1)]
#[should_panic(expected = "seed 0")]
async fn one_seed_of_seeds(sim: Sim) {
    panic!("seed {}", sim.seed());
}

/// Several seeds, with an attribute other than `#[should_panic]`.
#[timebox::sim_test(seeds = 4)]
#[ignore = "run by name"]
async fn several_seeds_kept_for_later(sim: Sim) {
    assert!(sim.seed() < 4);
}

fn main() {}
