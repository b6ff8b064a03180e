//! Interleaved rounds: every variant of a group measured in turn, many
//! short times, so that a slow stretch of a shared machine lands on every
//! variant alike.
//!
//! Criterion measures one variant after another, so a stretch of slow host
//! (a neighbour's job, a frequency change) can fall on one variant only and
//! move a ratio by several percent between runs of the same code. Here each
//! round runs every variant for the same number of operations, in an order
//! that rotates every two rounds and runs backwards every other round (so
//! each variant runs first about as often as any, and none always follows
//! the same one: within a round a variant follows its neighbour on one
//! side or the other, so what a variant leaves behind (its caches, its
//! allocator's state, its closing connections) falls on those two more
//! than on the rest); each round gives one ratio per variant to the
//! baseline, and the report is the median of those ratios (for an even
//! number of rounds, the upper of the two middle ones) with the
//! spread between the 10th and 90th percentiles. The per-operation times of
//! every round go to `target/bench-rounds/<group>.json` for
//! `benches/ratios.py --summary`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// One variant: its name, and a function that runs `iters` operations and
/// returns how long they took.
pub(crate) struct Variant<'a> {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn FnMut(u64) -> Duration + 'a>,
}

impl<'a> Variant<'a> {
    pub(crate) fn new(name: &'static str, run: impl FnMut(u64) -> Duration + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }
}

/// Runs `rounds` rounds of `iters` operations per variant, after one
/// warm-up round, prints each variant's median ratio to `baseline` with its
/// spread (ratios of throughput when `throughput`, else of time), and writes
/// the rounds to `target/bench-rounds/`.
pub(crate) fn run(
    group: &str,
    baseline: &str,
    throughput: bool,
    variants: &mut [Variant<'_>],
    rounds: usize,
    iters: u64,
) {
    for variant in variants.iter_mut() {
        (variant.run)(iters);
    }
    let count = variants.len();
    let mut per_op: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); count];
    for round in 0..rounds {
        for step in 0..count {
            // Rotating every round would undo the reversal for two
            // variants (`01`, `01`, ...): rotate every two.
            let position = (round / 2 + step) % count;
            let index = if round % 2 == 0 {
                position
            } else {
                count - 1 - position
            };
            let took = (variants[index].run)(iters);
            per_op[index].push(took.as_nanos() as f64 / iters as f64);
        }
    }
    let base = variants
        .iter()
        .position(|variant| variant.name == baseline)
        .expect("the baseline is one of the variants");
    eprintln!("{group}: {rounds} interleaved rounds of {iters} operations per variant");
    for (index, variant) in variants.iter().enumerate() {
        let mut ratios: Vec<f64> = per_op[index]
            .iter()
            .zip(&per_op[base])
            .map(|(ours, peer)| if throughput { peer / ours } else { ours / peer })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let mut times = per_op[index].clone();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "  {:<24} {:>9.1} ns/op   {} to {baseline}: {:.3} (p10 {:.3}, p90 {:.3})",
            variant.name,
            percentile(&times, 0.5),
            if throughput { "throughput" } else { "time" },
            percentile(&ratios, 0.5),
            percentile(&ratios, 0.1),
            percentile(&ratios, 0.9),
        );
    }
    write(group, variants, &per_op, iters);
}

/// The `p` quantile of sorted `values`, by the nearest rank.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn write(group: &str, variants: &[Variant<'_>], per_op: &[Vec<f64>], iters: u64) {
    let mut json = format!("{{\"group\": \"{group}\", \"iters\": {iters}, \"per_op_ns\": {{");
    for (index, variant) in variants.iter().enumerate() {
        let values: Vec<String> = per_op[index].iter().map(|v| format!("{v:.3}")).collect();
        let comma = if index + 1 < variants.len() { ", " } else { "" };
        let _ = write!(json, "\"{}\": [{}]{comma}", variant.name, values.join(", "));
    }
    json.push_str("}}\n");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-rounds");
    let file = dir.join(format!("{}.json", group.replace('/', "__")));
    if let Err(err) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, json)) {
        eprintln!("cannot write {}: {err}", file.display());
    }
}

/// Whether the bench binary was started to run benchmarks: by
/// `cargo bench`, which passes `--bench` (`cargo test --benches` passes
/// nothing, or `--test`), not to list them or to profile one.
pub(crate) fn wanted() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|arg| arg == "--bench")
        && !args
            .iter()
            .any(|arg| matches!(arg.as_str(), "--test" | "--list" | "--profile-time"))
}
