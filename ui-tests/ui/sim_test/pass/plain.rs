// trybuild builds this as a binary, without `--test`, so the `#[test]` the
// macro emits (and with it every use of these imports) is compiled out: this
// fixture checks that the attribute is accepted, and `tests/sim.rs` runs the
// same forms as tests.
#![allow(unused_imports)]

use std::time::Duration;

use timebox::sim::Sim;

#[timebox::sim_test]
async fn plain(sim: Sim) {
    sim.advance(Duration::from_secs(1)).await;
}

fn main() {}
