#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed)]
async fn key_without_value(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

fn main() {}
