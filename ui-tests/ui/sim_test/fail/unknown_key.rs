#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(sed = 42)]
async fn unknown_key(sim: Sim) {
    assert_eq!(sim.seed(), 42);
}

fn main() {}
