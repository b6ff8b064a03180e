#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seeds = 4)]
#[should_panic]
async fn every_seed_fails(sim: Sim) {
    assert_ne!(sim.seed(), 0);
}

fn main() {}
