#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test]
fn not_async(sim: Sim) {
    assert_eq!(sim.seed(), 0);
}

fn main() {}
