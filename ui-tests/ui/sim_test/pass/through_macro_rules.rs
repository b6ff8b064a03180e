// trybuild builds this as a binary, without `--test`, so the `#[test]` the
// macro emits (and with it every use of these imports) is compiled out: this
// fixture checks that the attribute is accepted, and `tests/sim.rs` runs the
// same forms as tests.
#![allow(unused_imports)]

use timebox::sim::Sim;

macro_rules! seeded {
    ($seed:literal) => {
        #[timebox::sim_test(seed = $seed)]
        async fn seeded(sim: Sim) {
            assert_eq!(sim.seed(), $seed);
        }
    };
}

seeded!(7);

fn main() {}
