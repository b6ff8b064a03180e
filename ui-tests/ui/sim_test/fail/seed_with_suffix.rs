#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 42u32)]
async fn seed_with_suffix(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

/// A seed is no time: a unit of time is a suffix like any other.
#[timebox::sim_test(seed = 5s)]
async fn seed_in_seconds(sim: Sim) {
    assert_eq!(sim.seed(), 5);
}

fn main() {}
