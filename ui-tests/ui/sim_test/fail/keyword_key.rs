#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test(crate = "timebox")]
async fn keyword_key(sim: Sim) {
    let _ = sim;
}

fn main() {}
