//! Stream watchdogs: first-item, inactivity and total timers, touches,
//! suspensions, and slow consumers, all on a paused clock.

#[path = "../support/mod.rs"]
mod support;

mod config;
mod consumers;
mod first_item;
mod inactivity;
mod model;
mod properties;

use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::stream::FusedStream;
use futures_util::{stream, Stream, StreamExt};
use proptest::prelude::*;
use timebox::config::StreamConfig;
use timebox::watchdog::{StreamTimeout, TimeoutKind, Watchdog, WatchdogExt, WatchdogHandle};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

/// What the inner stream yields: its own results, as an upstream would.
type Item = Result<u32, &'static str>;

/// What the consumer saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Item(Item),
    Timeout(TimeoutKind),
    End,
}

use Seen::{End, Timeout};
use TimeoutKind::{FirstItem, Inactivity, Total};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ok(n: u32) -> Seen {
    Seen::Item(Ok(n))
}

/// A watched stream fed by the test body, read by a consumer task that
/// records when each outcome arrived, in virtual seconds since the start.
struct Script {
    start: Instant,
    tx: Option<mpsc::UnboundedSender<Item>>,
    handle: WatchdogHandle,
    consumer: JoinHandle<Vec<(Duration, Seen)>>,
}

impl Script {
    fn start(watchdog: Watchdog) -> Self {
        let start = Instant::now();
        let (tx, rx) = mpsc::unbounded_channel();
        let items = stream::unfold(rx, |mut rx| async move {
            let item = rx.recv().await?;
            Some((item, rx))
        });
        let watched = items.watchdog(watchdog);
        let handle = watched.handle();
        let consumer = tokio::spawn(record(start, watched));
        Self {
            start,
            tx: Some(tx),
            handle,
            consumer,
        }
    }

    /// Waits until `n` virtual seconds after the start.
    async fn at(&self, n: u64) {
        sleep_until(self.start + secs(n)).await;
    }

    fn send(&self, item: Item) {
        if let Some(tx) = &self.tx {
            // The consumer may have ended on a timeout already.
            let _ = tx.send(item);
        }
    }

    /// Ends the inner stream cleanly.
    fn close(&mut self) {
        self.tx = None;
    }

    /// Everything the consumer saw. Unless closed, the inner stream hangs
    /// meanwhile, so only a timer can end it.
    async fn seen(self) -> Vec<(Duration, Seen)> {
        let seen = self.consumer.await.unwrap();
        drop(self.tx);
        seen
    }
}

async fn record(
    start: Instant,
    watched: impl Stream<Item = Result<Item, StreamTimeout>>,
) -> Vec<(Duration, Seen)> {
    let mut watched = pin!(watched);
    let mut seen = Vec::new();
    loop {
        let outcome = match watched.next().await {
            Some(Ok(item)) => Seen::Item(item),
            Some(Err(timeout)) => Timeout(timeout.kind()),
            None => End,
        };
        let done = outcome == End;
        seen.push((start.elapsed(), outcome));
        if done {
            return seen;
        }
    }
}

/// The timeout the next poll of `watched` yields, and how long that took
/// (a timeout already due comes at once).
async fn next_timeout<T: std::fmt::Debug>(
    watched: &mut (impl Stream<Item = Result<T, StreamTimeout>> + Unpin),
) -> (TimeoutKind, Duration) {
    let looked = Instant::now();
    let timeout = tokio::time::timeout(secs(3600), watched.next())
        .await
        .expect("a timeout within the hour")
        .expect("the stream yields it")
        .expect_err("a timeout, not an item");
    (timeout.kind(), looked.elapsed())
}

fn inactivity_30s() -> Watchdog {
    Watchdog::new().inactivity(secs(30))
}

fn first_90s_inactivity_30s() -> Watchdog {
    Watchdog::new().first_item(secs(90)).inactivity(secs(30))
}
