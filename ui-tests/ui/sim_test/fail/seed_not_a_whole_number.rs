#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = -1)]
async fn negative_seed(sim: Sim) {
    let _ = sim;
}

#[timebox::sim_test(seed = 1.5)]
async fn fractional_seed(sim: Sim) {
    let _ = sim;
}

fn main() {}
