//! What a deadline costs: `bounded` against `tokio::time::timeout` and a bare
//! await, in one run, for a future that is ready at once and one that pends
//! ten times; and `Deadline::current()` inside a scope.
//!
//! The ratio bounded/timeout is the figure to watch (goal: at most 1.1);
//! `python3 benches/ratios.py deadline_overhead` prints it from the results.
//! `scoped_bare` is the bare await inside the deadline scope that `bounded`
//! runs in, so `bounded - scoped_bare` against `tokio_timeout - bare` compares
//! the gate alone with tokio's timer.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use timebox::deadline::{bounded, Deadline};
use tokio::runtime::Runtime;

#[path = "support/rounds.rs"]
mod rounds;

use rounds::Variant;

/// Far enough away that no run reaches it: the cost measured is the gate's.
const FAR: Duration = Duration::from_secs(3600);

/// A future that returns `Pending` `n` times, waking itself each time.
struct PendN(u32);

impl Future for PendN {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.0 == 0 {
            return Poll::Ready(7);
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

/// Times `iters` awaits of `make()`, each wrapped by `wrap`.
fn bench_wrappers(c: &mut Criterion, group: &str, pends: u32) {
    let rt = runtime();
    let mut group = c.benchmark_group(group);
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(PendN(black_box(pends)).await);
                }
                start.elapsed()
            })
        });
    });
    group.bench_function("tokio_timeout", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let _ = black_box(tokio::time::timeout(FAR, PendN(black_box(pends))).await);
                }
                start.elapsed()
            })
        });
    });
    group.bench_function("scoped_bare", |b| {
        b.iter_custom(|iters| {
            rt.block_on(Deadline::after(FAR).scope(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(PendN(black_box(pends)).await);
                }
                start.elapsed()
            }))
        });
    });
    group.bench_function("bounded", |b| {
        b.iter_custom(|iters| {
            rt.block_on(Deadline::after(FAR).scope(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let _ = black_box(bounded(PendN(black_box(pends))).await);
                }
                start.elapsed()
            }))
        });
    });
    group.finish();
}

fn ready(c: &mut Criterion) {
    bench_wrappers(c, "deadline_overhead/ready", 0);
}

fn pend10(c: &mut Criterion) {
    bench_wrappers(c, "deadline_overhead/pend10", 10);
}

fn current(c: &mut Criterion) {
    let mut group = c.benchmark_group("deadline_overhead/current");
    group.bench_function("in_scope", |b| {
        Deadline::after(FAR).sync_scope(|| b.iter(|| black_box(Deadline::current())));
    });
    group.bench_function("no_scope", |b| b.iter(|| black_box(Deadline::current())));
    group.finish();
}

/// One variant of `bench_wrappers` as a function of the operation count.
fn wrapper<'a>(rt: &'a Runtime, name: &'static str, pends: u32) -> Variant<'a> {
    Variant::new(name, move |iters| match name {
        "bare" => rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(PendN(black_box(pends)).await);
            }
            start.elapsed()
        }),
        "tokio_timeout" => rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                let _ = black_box(tokio::time::timeout(FAR, PendN(black_box(pends))).await);
            }
            start.elapsed()
        }),
        "scoped_bare" => rt.block_on(Deadline::after(FAR).scope(async {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(PendN(black_box(pends)).await);
            }
            start.elapsed()
        })),
        _ => rt.block_on(Deadline::after(FAR).scope(async {
            let start = Instant::now();
            for _ in 0..iters {
                let _ = black_box(bounded(PendN(black_box(pends))).await);
            }
            start.elapsed()
        })),
    })
}

/// `ready` and `pend10` again, in interleaved rounds (see
/// `support/rounds.rs`): time ratios to `tokio::time::timeout`.
fn interleaved() {
    let rt = runtime();
    for (group, pends, iters) in [
        ("deadline_overhead/ready", 0, 200_000),
        ("deadline_overhead/pend10", 10, 20_000),
    ] {
        let mut variants: Vec<Variant<'_>> = ["bare", "tokio_timeout", "scoped_bare", "bounded"]
            .into_iter()
            .map(|name| wrapper(&rt, name, pends))
            .collect();
        rounds::run(group, "tokio_timeout", false, &mut variants, 40, iters);
    }
}

criterion_group!(benches, ready, pend10, current);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if rounds::wanted() {
        interleaved();
    }
}
