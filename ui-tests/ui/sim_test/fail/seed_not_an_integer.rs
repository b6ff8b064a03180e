#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = "42")]
async fn seed_not_an_integer(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

fn main() {}
