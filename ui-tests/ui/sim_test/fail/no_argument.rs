#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test]
async fn no_argument() {
    let _ = Sim::new(0);
}

fn main() {}
