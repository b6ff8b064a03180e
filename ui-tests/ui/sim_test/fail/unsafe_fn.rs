use timebox::sim::Sim;

#[timebox::sim_test]
async unsafe fn unsafe_fn(sim: Sim) {
    let _ = sim;
}

fn main() {}
