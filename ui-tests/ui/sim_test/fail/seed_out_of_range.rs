#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(seed = 18446744073709551616)]
async fn seed_out_of_range(sim: Sim) {
    assert_eq!(sim.seed(), 0);
}

fn main() {}
