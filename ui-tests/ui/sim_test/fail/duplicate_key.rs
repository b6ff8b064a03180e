#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 1, seed = 2)]
async fn duplicate_key(sim: Sim) {
    assert_eq!(sim.seed(), 1);
}

fn main() {}
