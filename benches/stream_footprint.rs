//! What one live stream costs in memory: 100 000 of them kept alive at once,
//! counted by a global allocator that tracks live bytes and allocations.
//!
//! A live stream here is what a server holds per streamed answer:
//!
//! - a [`Watched`] stream over `futures_util::stream::pending::<u32>()` (a
//!   zero-sized stream that never yields, so everything counted is the
//!   watchdog's), with first item 90 s, inactivity 30 s and total 900 s,
//!   polled once so its timer is registered with the runtime;
//! - its registry entry: the [`RequestGuard`] from one shared [`Registry`]
//!   for the id `req-{i}`, counting the id string, the table's copy of it,
//!   the table's share of map nodes and the entry's cancellation token;
//! - a heartbeat timer: a 15 s [`Interval`] whose first tick is 15 s away,
//!   polled once so it is registered;
//! - an [`InFlightGuard`] from one shared [`InFlight`].
//!
//! Counted: every byte requested from the allocator (`Layout::size`, not the
//! allocator's own rounding or headers) and still live while the 100 000 are,
//! including the `Vec` that holds them, that is each item's inline size. Not
//! counted: the runtime, its timer wheel (timers are intrusive, so the wheel
//! does not grow per timer), the shared registry and in-flight counter. Each
//! component is also measured on its own, in a separate pass of 100 000.
//!
//! Goal: at most 1 KiB per live stream; the run prints PASS or FAIL and exits
//! non-zero on FAIL.
//!
//! ```text
//! cargo bench -p timebox-benches --bench stream_footprint
//! ```

use std::alloc::System;
use std::future::poll_fn;
use std::hint::black_box;
use std::mem::size_of;
use std::process::ExitCode;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{self, Pending, StreamExt};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use timebox::registry::{Registry, RequestGuard};
use timebox::shutdown::{InFlight, InFlightGuard};
use timebox::watchdog::{Watchdog, WatchdogExt, Watched};
use tokio::runtime::{Builder, Runtime};
use tokio::time::{interval_at, Instant, Interval};

// The workspace forbids `unsafe_code`, which no attribute in this file can
// relax, and a `GlobalAlloc` impl needs `unsafe impl`: stats_alloc's
// counting wrapper around `System` is used instead.
#[global_allocator]
static ALLOC: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Live streams per pass.
const STREAMS: usize = 100_000;

/// The goal: bytes per live stream.
const GOAL: f64 = 1024.0;

/// The heartbeat period, as for SSE keep-alive comments.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// The watched stream of one live stream.
type Stream = Watched<Pending<u32>>;

/// Everything held for one live stream.
type LiveStream = (Stream, RequestGuard, Interval, InFlightGuard);

/// The shared state the live streams register with.
struct Shared {
    watchdog: Watchdog,
    registry: Registry,
    in_flight: InFlight,
}

impl Shared {
    fn new() -> Self {
        Self {
            watchdog: Watchdog::new()
                .first_item(Duration::from_secs(90))
                .inactivity(Duration::from_secs(30))
                .total(Duration::from_secs(900)),
            registry: Registry::new(),
            in_flight: InFlight::new(),
        }
    }

    /// A watched stream, polled once: its timer is registered.
    fn stream(&self, cx: &mut Context<'_>) -> Stream {
        let mut stream = stream::pending::<u32>().watchdog(self.watchdog);
        assert!(stream.poll_next_unpin(cx).is_pending());
        stream
    }

    /// The registry entry for the `i`th stream.
    fn entry(&self, i: usize) -> RequestGuard {
        self.registry
            .register(format!("req-{i}"))
            .expect("ids are unique")
    }

    /// A heartbeat timer, polled once: its first tick is registered.
    fn heartbeat(cx: &mut Context<'_>) -> Interval {
        let mut heartbeat = interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
        assert!(heartbeat.poll_tick(cx).is_pending());
        heartbeat
    }

    fn live_stream(&self, i: usize, cx: &mut Context<'_>) -> LiveStream {
        (
            self.stream(cx),
            self.entry(i),
            Self::heartbeat(cx),
            self.in_flight.enter(),
        )
    }
}

/// Live heap bytes and allocations, as the allocator counts them now.
#[derive(Clone, Copy)]
struct Live {
    bytes: usize,
    allocations: usize,
}

impl Live {
    fn now() -> Self {
        let stats = ALLOC.stats();
        Self {
            bytes: stats.bytes_allocated - stats.bytes_deallocated,
            allocations: stats.allocations - stats.deallocations,
        }
    }
}

/// What `n` items of one kind keep alive.
struct Footprint {
    name: &'static str,
    n: usize,
    inline: usize,
    bytes: usize,
    allocations: usize,
}

impl Footprint {
    fn bytes_per_item(&self) -> f64 {
        self.bytes as f64 / self.n as f64
    }

    fn allocations_per_item(&self) -> f64 {
        self.allocations as f64 / self.n as f64
    }

    fn row(&self) {
        let per_item = self.bytes_per_item();
        println!(
            "  {:<22} {:>8} {:>10.1} {:>10.1} {:>8.2}",
            self.name,
            self.inline,
            per_item - self.inline as f64,
            per_item,
            self.allocations_per_item(),
        );
    }
}

/// Makes `n` items with `make` inside the runtime (a `Context` at hand to
/// poll them once), keeps them all alive, and counts what they hold.
fn measure<T>(
    rt: &Runtime,
    name: &'static str,
    n: usize,
    mut make: impl FnMut(usize, &mut Context<'_>) -> T,
) -> Footprint {
    let before = Live::now();
    let items = rt.block_on(poll_fn(|cx| {
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            items.push(make(i, cx));
        }
        Poll::Ready(items)
    }));
    let after = Live::now();
    black_box(&items);
    // Timers and guards deregister on drop; do it inside the runtime.
    let guard = rt.enter();
    drop(items);
    drop(guard);
    Footprint {
        name,
        n,
        inline: size_of::<T>(),
        bytes: after.bytes.saturating_sub(before.bytes),
        allocations: after.allocations.saturating_sub(before.allocations),
    }
}

fn main() -> ExitCode {
    let rt = Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    let shared = Shared::new();

    // Warm up: the runtime's lazily made state is not the streams'.
    measure(&rt, "warm-up", 1_000, |i, cx| shared.live_stream(i, cx));

    let total = measure(&rt, "live stream", STREAMS, |i, cx| {
        shared.live_stream(i, cx)
    });
    let parts = [
        measure(&rt, "Watched<Pending<u32>>", STREAMS, |_, cx| {
            shared.stream(cx)
        }),
        measure(&rt, "registry entry + id", STREAMS, |i, _| shared.entry(i)),
        measure(&rt, "heartbeat Interval", STREAMS, |_, cx| {
            Shared::heartbeat(cx)
        }),
        measure(&rt, "InFlightGuard", STREAMS, |_, _| {
            shared.in_flight.enter()
        }),
    ];
    assert!(shared.registry.is_empty() && shared.in_flight.count() == 0);

    let per_stream = total.bytes_per_item();
    println!("stream_footprint: {STREAMS} live streams");
    println!("  total bytes            {}", total.bytes);
    println!("  bytes per stream       {per_stream:.1}");
    println!(
        "  allocations per stream {:.2}",
        total.allocations_per_item()
    );
    println!();
    println!("per component, each in its own pass of {STREAMS}:");
    println!(
        "  {:<22} {:>8} {:>10} {:>10} {:>8}",
        "component", "inline B", "heap B", "total B", "allocs"
    );
    for part in &parts {
        part.row();
    }
    let sum: f64 = parts.iter().map(Footprint::bytes_per_item).sum();
    println!(
        "  {:<22} {:>8} {:>10} {sum:>10.1}",
        "sum of components", "", ""
    );
    total.row();
    println!();

    if per_stream <= GOAL {
        println!("PASS: {per_stream:.1} B per live stream <= {GOAL} B");
        ExitCode::SUCCESS
    } else {
        println!("FAIL: {per_stream:.1} B per live stream > {GOAL} B");
        ExitCode::FAILURE
    }
}
