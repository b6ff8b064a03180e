#![allow(dead_code)]

use timebox::sim::Sim;

struct Fixture;

impl Fixture {
    #[timebox::sim_test]
    async fn takes_self_and_sim(&self, sim: Sim) {
        let _ = sim;
    }
}

fn main() {}
