#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test]
async fn two_arguments(sim: Sim, retries: u32) {
    assert_eq!(sim.seed(), u64::from(retries));
}

fn main() {}
