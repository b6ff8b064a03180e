#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test]
async fn generic<T: Default>(sim: Sim) {
    let _ = (sim.seed(), T::default());
}

fn main() {}
