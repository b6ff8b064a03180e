// trybuild builds this as a binary, without `--test`, so the `#[test]` the
// macro emits (and with it every use of these imports) is compiled out: this
// fixture checks that the attribute is accepted, and `tests/sim.rs` runs the
// same forms as tests.
#![allow(unused_imports)]

use timebox::sim::Sim;

#[timebox::sim_test]
async fn returns_result(sim: Sim) -> Result<(), std::num::ParseIntError> {
    let seed: u64 = "0".parse()?;
    assert_eq!(sim.seed(), seed);
    Ok(())
}

fn main() {}
