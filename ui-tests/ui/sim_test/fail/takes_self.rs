#![allow(dead_code)]

use timebox::sim::Sim;

struct Fixture;

impl Fixture {
    #[timebox::sim_test]
    async fn takes_self(self) {
        let _ = (self, Sim::new(0));
    }
}

fn main() {}
