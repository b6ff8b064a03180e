//! What a retry budget costs per call: a deposit (the first attempt) and a
//! withdrawal (a retry) on one shared bucket, for timebox's `RetryBudget`
//! against tower's `TpsBudget`, on 1 thread and on 2 threads sharing the
//! bucket, in one run.
//!
//! Both budgets are at a 10 % retry ratio, so after the first few cycles both
//! run in their steady state (most withdrawals refused, one in ten paid). The
//! figure to watch is the 2-thread ratio (goal: timebox at least twice
//! tower's throughput, i.e. a median-time ratio of at most 0.5):
//! `python3 benches/ratios.py retry_budget --baseline tower_tps` prints it
//! from the results.

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use timebox::config::BudgetConfig;
use timebox::retry::{RetryBudget, RetryKind};
use tower::retry::budget::{Budget, TpsBudget};

/// One call's worth of budget work: a retry asked for, a first attempt paid in.
trait Cycle: Sync {
    fn cycle(&self);
}

impl Cycle for RetryBudget {
    fn cycle(&self) {
        black_box(self.try_withdraw(RetryKind::Transient));
        self.on_first_attempt();
    }
}

impl Cycle for TpsBudget {
    fn cycle(&self) {
        black_box(self.withdraw());
        self.deposit();
    }
}

fn timebox_budget() -> RetryBudget {
    RetryBudget::new(&BudgetConfig::default())
}

fn tower_budget() -> TpsBudget {
    // tower's own defaults but at timebox's 10 % ratio.
    TpsBudget::new(Duration::from_secs(10), 10, 0.1)
}

/// `iters` cycles on one thread.
fn one_thread(budget: &impl Cycle, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        budget.cycle();
    }
    start.elapsed()
}

/// `iters` cycles split over two threads sharing `budget`; the time from the
/// common start to the end of the slower thread, thread start-up excluded.
fn two_threads(budget: &impl Cycle, iters: u64) -> Duration {
    let start = Barrier::new(2);
    thread::scope(|s| {
        let halves = [iters.div_ceil(2), iters / 2];
        let workers = halves.map(|n| {
            let start = &start;
            s.spawn(move || {
                start.wait();
                one_thread(budget, n)
            })
        });
        workers
            .into_iter()
            .map(|w| w.join().expect("a bench thread does not panic"))
            .max()
            .unwrap_or_default()
    })
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("retry_budget/1_thread");
    group.bench_function("timebox", |b| {
        b.iter_custom(|iters| one_thread(&timebox_budget(), iters));
    });
    group.bench_function("tower_tps", |b| {
        b.iter_custom(|iters| one_thread(&tower_budget(), iters));
    });
    group.finish();

    let mut group = c.benchmark_group("retry_budget/2_threads");
    group.bench_function("timebox", |b| {
        b.iter_custom(|iters| two_threads(&timebox_budget(), iters));
    });
    group.bench_function("tower_tps", |b| {
        b.iter_custom(|iters| two_threads(&tower_budget(), iters));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
