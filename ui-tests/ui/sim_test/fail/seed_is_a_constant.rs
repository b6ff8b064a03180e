use timebox::sim::Sim;

const SEED: u64 = 7;

#[timebox::sim_test(seed = SEED)]
async fn seed_is_a_constant(sim: Sim) {
    let _ = (sim, SEED);
}

fn main() {}
