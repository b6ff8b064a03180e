use timebox::sim::Sim;

#[timebox::sim_test(seeds = "8")]
async fn string(sim: Sim) {
    let _ = sim;
}

#[timebox::sim_test(seeds = 8u8)]
async fn suffix(sim: Sim) {
    let _ = sim;
}

#[timebox::sim_test(seeds = 18446744073709551616)]
async fn out_of_range(sim: Sim) {
    let _ = sim;
}

fn main() {}
