#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 42u32)]
async fn seed_with_suffix(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

fn main() {}
