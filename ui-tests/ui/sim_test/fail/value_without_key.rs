use timebox::sim::Sim;

#[timebox::sim_test(42)]
async fn value_without_key(sim: Sim) {
    let _ = sim;
}

fn main() {}
