#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seeds = 0)]
async fn seeds_zero(sim: Sim) {
    assert_eq!(sim.seed(), 0);
}

fn main() {}
