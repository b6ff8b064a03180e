#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 42, seeds = 8)]
async fn seed_and_seeds(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

fn main() {}
