#![allow(dead_code)]

use timebox::sim::Sim;

#[timebox::sim_test]
struct NotAFunction {
    sim: Sim,
}

fn main() {}
