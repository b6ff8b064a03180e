//! [`Limiter`]: A2, at most `limit` requests run at once; the rest wait in
//! a queue that CoDel keeps short, served newest-first while congested.
//!
//! A request over the limit waits for a slot. Its wait ends at the first of:
//! a slot handed to it ([`Permit`]); its deadline (the caller bounds the
//! wait with it); or CoDel's bound, which sheds it once it has waited
//! `target` *and* the queue has not been empty for `interval`. While the
//! queue has been empty within the last `interval` a request may wait up
//! to that `interval`, so a burst is absorbed; once the queue stands, no
//! one waits longer than `target`, so the queue cannot grow a standing
//! delay. A queue that empties because its waiters were shed is still
//! congested: only serving it empty, or a slot left free, ends that (else
//! each mass shed would let the next 100 ms of arrivals wait in line
//! again) ("Fail at Scale", Facebook 2015, and CoDel, Nichols and Jacobson
//! 2012). While congested a freed slot goes to the newest waiter (adaptive
//! LIFO): under overload the oldest waiters are the ones most likely to
//! miss their deadlines anyway.
//!
//! The time with its slot of a request that was answered, or cut by its
//! deadline, is a sample for the limit algorithm ([`LimitAlgorithm`]),
//! which may grow or shrink the limit; a request that did no work, or
//! whose client went away first, gives its slot back with none (see
//! [`Permit`]).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{sleep_until, Instant, Sleep};

use super::limit::LimitAlgorithm;
use crate::config::{Concurrency, QueueConfig};

/// The concurrency limit of a server, shared by its requests.
#[derive(Debug, Clone)]
pub(crate) struct Limiter {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    target: Duration,
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    algorithm: LimitAlgorithm,
    in_flight: usize,
    queue: VecDeque<Waiter>,
    next_id: u64,
    /// When the queue was last empty, for CoDel: since then it has been
    /// congested once `interval` has passed.
    last_empty: Instant,
    /// Whether the queue is empty only because the waiters of a queue that
    /// had stood for the interval left it unserved (shed, out of time, or
    /// gone): the congestion goes on, so `last_empty` stays. Only a queue
    /// emptied by serving it, or a free slot, ends it. A younger queue that
    /// empties unserved was never congested: its next waiter starts anew.
    emptied_unserved: bool,
    /// The spell of shedding going on, if one is: the log says when one
    /// begins and ends, not each shed.
    shedding: Option<Shedding>,
}

/// A spell of shedding: from a first shed until none for [`SHED_QUIET`].
/// Under a load that keeps the queue near its bound it empties and stands
/// again many times a second; a spell spans those.
#[derive(Debug)]
struct Shedding {
    shed: u64,
    last: Instant,
}

/// How long with no request shed ends a spell of shedding.
const SHED_QUIET: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Waiter {
    id: u64,
    slot: oneshot::Sender<Permit>,
}

/// Why a wait for a slot ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// CoDel shed it: it waited past the target in a standing queue, or
    /// past the interval.
    Overloaded,
    /// Its deadline came first.
    Deadline,
}

impl Limiter {
    /// The limiter of `concurrency`; `None` when it is off.
    pub(crate) fn new(concurrency: Concurrency, queue: &QueueConfig) -> Option<Self> {
        let algorithm = LimitAlgorithm::from_config(concurrency)?;
        Some(Self {
            shared: Arc::new(Shared {
                target: queue.target(),
                interval: queue.interval(),
                state: Mutex::new(State {
                    algorithm,
                    in_flight: 0,
                    queue: VecDeque::new(),
                    next_id: 0,
                    last_empty: Instant::now(),
                    emptied_unserved: false,
                    shedding: None,
                }),
            }),
        })
    }

    /// A slot now if one is free, else a place in the queue that waits at
    /// most until `deadline`.
    pub(crate) fn acquire(&self, deadline: Option<Instant>) -> Acquire {
        let mut state = self.shared.lock();
        let now = Instant::now();
        if state.in_flight < state.algorithm.limit() {
            if state.queue.is_empty() {
                state.last_empty = now;
                state.emptied_unserved = false;
            }
            state.in_flight += 1;
            let in_flight = state.in_flight;
            let ended = state.end_quiet_shedding(now);
            drop(state);
            say_shedding_ended(ended);
            return Acquire::Ready(Some(Permit::new(&self.shared, in_flight)));
        }
        if state.queue.is_empty() && !state.emptied_unserved {
            state.last_empty = now;
        }
        let shed_at = (now + self.shared.target).max(state.last_empty + self.shared.interval);
        let (until, refusal) = match deadline {
            Some(deadline) if deadline < shed_at => (deadline, Refusal::Deadline),
            _ => (shed_at, Refusal::Overloaded),
        };
        let id = state.next_id;
        state.next_id += 1;
        let (slot, receiver) = oneshot::channel();
        state.queue.push_back(Waiter { id, slot });
        drop(state);
        Acquire::Queued(Queued {
            shared: Arc::clone(&self.shared),
            id,
            receiver,
            until: Box::pin(sleep_until(until)),
            refusal,
        })
    }

    /// The limit now and the requests running; for tests and events.
    #[cfg(test)]
    fn snapshot(&self) -> (usize, usize, usize) {
        let state = self.shared.lock();
        (state.algorithm.limit(), state.in_flight, state.queue.len())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot came free (with what its holder's time with it says): hands
    /// it, and any the limit now allows, to waiters.
    fn release(self: &Arc<Self>, mut sample: Option<(Instant, Duration, usize, bool)>) {
        let mut freed = 1;
        while freed > 0 {
            let (handed, moved, shedding_ended) = {
                let mut state = self.lock();
                let mut moved = None;
                if let Some((ended, rtt, in_flight, dropped)) = sample.take() {
                    let before = state.algorithm.limit();
                    state.algorithm.on_sample(ended, rtt, in_flight, dropped);
                    let after = state.algorithm.limit();
                    moved = (after != before).then_some((before, after));
                }
                state.in_flight -= freed;
                let now = Instant::now();
                let handed = state.hand_over(self.interval, now);
                let shedding_ended = state.end_quiet_shedding(now);
                (handed, moved, shedding_ended)
            };
            say_shedding_ended(shedding_ended);
            if let Some((before, after)) = moved {
                tracing::debug!(
                    limit = after,
                    previous = before,
                    "concurrency limit moved from {before} to {after}",
                );
            }
            // Sent outside the lock: a waiter that has gone hands its
            // permit straight back, which frees the slot again.
            freed = 0;
            for (waiter, in_flight) in handed {
                if let Err(mut permit) = waiter.slot.send(Permit::new(self, in_flight)) {
                    permit.shared = None;
                    freed += 1;
                }
            }
        }
    }
}

impl State {
    /// Takes the waiters that get a slot now: newest first while the queue
    /// is congested, oldest first otherwise.
    fn hand_over(&mut self, interval: Duration, now: Instant) -> Vec<(Waiter, usize)> {
        let congested = !self.queue.is_empty() && now.duration_since(self.last_empty) >= interval;
        let mut handed = Vec::new();
        while self.in_flight < self.algorithm.limit() {
            let next = if congested {
                self.queue.pop_back()
            } else {
                self.queue.pop_front()
            };
            let Some(waiter) = next else { break };
            self.in_flight += 1;
            handed.push((waiter, self.in_flight));
        }
        if self.queue.is_empty() {
            self.last_empty = now;
            self.emptied_unserved = false;
        }
        handed
    }

    /// Takes waiter `id` out of the queue; `false` when it was handed a
    /// slot already.
    fn leave(&mut self, id: u64, interval: Duration) -> bool {
        let Some(index) = self.queue.iter().position(|waiter| waiter.id == id) else {
            return false;
        };
        self.queue.remove(index);
        if self.queue.is_empty() {
            self.emptied_unserved = Instant::now().duration_since(self.last_empty) >= interval;
        }
        true
    }

    /// Counts a request CoDel shed at `now`: the end of a spell that had
    /// gone quiet before it, if one had (how many it shed), and, when this
    /// shed begins a spell, the limit and what runs, for its line.
    fn shed_said(&mut self, now: Instant) -> (Option<u64>, Option<(usize, usize)>) {
        let ended = self.end_quiet_shedding(now);
        let began = self
            .count_shed(now)
            .then(|| (self.algorithm.limit(), self.in_flight));
        (ended, began)
    }

    /// Counts a request CoDel shed at `now`; whether it begins a spell.
    fn count_shed(&mut self, now: Instant) -> bool {
        match &mut self.shedding {
            Some(spell) => {
                spell.shed += 1;
                spell.last = now;
                false
            }
            None => {
                self.shedding = Some(Shedding { shed: 1, last: now });
                true
            }
        }
    }

    /// Ends the spell of shedding if none was shed for [`SHED_QUIET`]:
    /// how many it shed.
    fn end_quiet_shedding(&mut self, now: Instant) -> Option<u64> {
        let quiet = self
            .shedding
            .as_ref()
            .is_some_and(|spell| now.duration_since(spell.last) >= SHED_QUIET);
        quiet
            .then(|| self.shedding.take())
            .flatten()
            .map(|spell| spell.shed)
    }
}

/// Says that a spell of shedding ended, and what it shed.
fn say_shedding_ended(shed: Option<u64>) {
    if let Some(shed) = shed {
        tracing::info!(
            shed,
            "no request has been shed for {} s: the concurrency limit's queue no longer \
             stands ({shed} were shed while it did)",
            SHED_QUIET.as_secs()
        );
    }
}

/// A slot of the limit, given back with what its request teaches the
/// limit algorithm.
///
/// Its time with the slot is a sample: [`Permit::answered`] for an answer,
/// [`Permit::timed_out`] for work its deadline cut, which the adaptive
/// algorithms read as overload. A permit dropped without either (its
/// request's future dropped before an answer: the client went away, a
/// hedge lost its race, the server stopped) goes back with no sample, as
/// Netflix's limiters ignore a cancelled request: a client's hang-up says
/// nothing of the server's latency, and one after a millisecond would
/// teach Vegas a no-load latency of nothing.
#[derive(Debug)]
pub(crate) struct Permit {
    shared: Option<Arc<Shared>>,
    since: Instant,
    in_flight: usize,
}

impl Permit {
    fn new(shared: &Arc<Shared>, in_flight: usize) -> Self {
        Self {
            shared: Some(Arc::clone(shared)),
            since: Instant::now(),
            in_flight,
        }
    }

    /// Gives the slot back: the request was answered.
    pub(crate) fn answered(mut self) {
        self.release_sampled(false);
    }

    /// Gives the slot back as dropped work: its deadline cut the request.
    pub(crate) fn timed_out(mut self) {
        self.release_sampled(true);
    }

    /// Gives the slot back with no sample: the request did no work (a
    /// route refused it as too short), so its time says nothing of the
    /// server's latency. The same as dropping it, said where it is meant.
    pub(crate) fn release_unsampled(self) {
        drop(self);
    }

    fn release_sampled(&mut self, dropped: bool) {
        if let Some(shared) = self.shared.take() {
            let now = Instant::now();
            let rtt = now.duration_since(self.since);
            shared.release(Some((now, rtt, self.in_flight, dropped)));
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.release(None);
        }
    }
}

/// The wait for a slot: ready at once, or queued.
#[must_use = "futures do nothing unless you .await or poll them"]
#[derive(Debug)]
pub(crate) enum Acquire {
    Ready(Option<Permit>),
    Queued(Queued),
}

/// A request waiting in the queue; dropping it leaves the queue.
#[derive(Debug)]
pub(crate) struct Queued {
    shared: Arc<Shared>,
    id: u64,
    receiver: oneshot::Receiver<Permit>,
    until: Pin<Box<Sleep>>,
    refusal: Refusal,
}

impl Future for Acquire {
    type Output = Result<Permit, Refusal>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let result = match this {
            Self::Ready(permit) => match permit.take() {
                Some(permit) => Ok(permit),
                None => panic!("`Acquire` polled after completion"),
            },
            Self::Queued(queued) => {
                if let Poll::Ready(Ok(permit)) = Pin::new(&mut queued.receiver).poll(cx) {
                    queued.unless_too_late(permit)
                } else {
                    if queued.until.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    queued.give_up()
                }
            }
        };
        *this = Self::Ready(None);
        Poll::Ready(result)
    }
}

impl Queued {
    /// The wait's bound passed: leaves the queue, unless a slot was handed
    /// over in the meantime. A shed is counted, and the first of a spell
    /// said.
    fn give_up(&mut self) -> Result<Permit, Refusal> {
        let shed = self.refusal == Refusal::Overloaded;
        let (left, said) = {
            let mut state = self.shared.lock();
            let left = state.leave(self.id, self.shared.interval);
            // Counted under the lock that took it out of the queue.
            (
                left,
                (left && shed).then(|| state.shed_said(Instant::now())),
            )
        };
        // Not in the queue: a slot was handed over, or is on its way (sent
        // after the lock, it comes back to `release` now the channel is
        // closed, and the request is shed all the same).
        let permit = if left { None } else { self.handed_over() };
        let said = said.or_else(|| {
            (permit.is_none() && shed).then(|| self.shared.lock().shed_said(Instant::now()))
        });
        if let Some((ended, began)) = said {
            say_shedding_ended(ended);
            if let Some((limit, in_flight)) = began {
                tracing::warn!(
                    limit,
                    in_flight,
                    target_ms = self.shared.target.as_millis(),
                    "requests are shed: the concurrency limit's queue has stood for \
                     `server.admission.queue.interval_ms`, and a request that waits \
                     `target_ms` in it is answered 503 (the spell's end is said at the \
                     first request once none has been shed for 10 s)"
                );
            }
        }
        match permit {
            Some(permit) => self.unless_too_late(permit),
            None => Err(self.refusal),
        }
    }

    /// Leaves the queue: the slot handed over before, if one was.
    fn leave(&mut self) -> Option<Permit> {
        if self.shared.lock().leave(self.id, self.shared.interval) {
            return None;
        }
        self.handed_over()
    }

    /// The slot handed to a waiter no longer in the queue. Closed first: a
    /// slot sent after this comes back to `release`, which frees it at
    /// once, rather than waiting in the channel until it is dropped.
    fn handed_over(&mut self) -> Option<Permit> {
        self.receiver.close();
        self.receiver.try_recv().ok()
    }

    /// A slot handed over: the request's, unless its deadline passed before
    /// it could take it, when the request can do no work. The slot then
    /// goes back with no sample: a time with it of next to nothing would
    /// teach an adaptive limit a latency of nothing (Vegas: a no-load
    /// latency that makes every real request look queued).
    fn unless_too_late(&self, permit: Permit) -> Result<Permit, Refusal> {
        if self.refusal == Refusal::Deadline && self.until.deadline() <= Instant::now() {
            permit.release_unsampled();
            return Err(Refusal::Deadline);
        }
        Ok(permit)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        // Handed a slot it will not take (its request was dropped, the
        // client gone): back with no sample, as above.
        if let Some(permit) = self.leave() {
            permit.release_unsampled();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroUsize;
    use std::task::Poll;
    use std::time::Duration;

    use tokio::time::{advance, Instant};

    use super::{Limiter, Refusal};
    use crate::config::{Concurrency, QueueConfig};

    const MS: Duration = Duration::from_millis(1);

    fn limiter(limit: usize) -> Limiter {
        let concurrency = Concurrency::Fixed(NonZeroUsize::new(limit).unwrap());
        Limiter::new(concurrency, &QueueConfig::default()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_spell_of_shedding_ends_10_s_after_its_last_shed() {
        let limiter = limiter(1);
        let mut state = limiter.shared.lock();
        let start = Instant::now();
        assert!(state.count_shed(start), "the first shed begins a spell");
        assert!(!state.count_shed(start + 100 * MS));
        assert_eq!(state.end_quiet_shedding(start + 10_099 * MS), None);
        assert_eq!(state.end_quiet_shedding(start + 10_100 * MS), Some(2));
        assert_eq!(
            state.end_quiet_shedding(start + 10_200 * MS),
            None,
            "said once"
        );
        // A shed after a quiet spell no request came to end: the old spell
        // ends, and a new one begins.
        assert!(state.count_shed(start + 20_000 * MS));
        let (ended, began) = state.shed_said(start + 40_000 * MS);
        assert_eq!(ended, Some(1));
        assert!(began.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_is_handed_to_the_oldest_waiter_while_the_queue_is_young() {
        let limiter = limiter(1);
        let holder = limiter.acquire(None).await.unwrap();
        let mut first = tokio::spawn(limiter.acquire(None));
        let second = tokio::spawn(limiter.acquire(None));
        tokio::task::yield_now().await;
        advance(10 * MS).await;
        drop(holder);
        let permit = (&mut first).await.unwrap().unwrap();
        assert_eq!(limiter.snapshot(), (1, 1, 1));
        drop(permit);
        assert!(second.await.unwrap().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn while_congested_the_newest_waiter_is_served_first() {
        let limiter = limiter(1);
        let holder = limiter.acquire(None).await.unwrap();
        let old = tokio::spawn(limiter.acquire(None));
        tokio::task::yield_now().await;
        advance(99 * MS).await;
        let older = tokio::spawn(limiter.acquire(None));
        tokio::task::yield_now().await;
        advance(2 * MS).await;
        let newest = tokio::spawn(limiter.acquire(None));
        tokio::task::yield_now().await;
        // The first waiter's 100 ms are over: the queue is congested.
        assert_eq!(old.await.unwrap().unwrap_err(), Refusal::Overloaded);
        advance(2 * MS).await;
        drop(holder);
        let _served = newest.await.unwrap().unwrap();
        assert_eq!(older.await.unwrap().unwrap_err(), Refusal::Overloaded);
    }

    #[tokio::test(start_paused = true)]
    async fn codel_sheds_after_the_target_only_once_the_queue_stood_for_the_interval() {
        let limiter = limiter(1);
        let _holder = limiter.acquire(None).await.unwrap();
        let start = Instant::now();
        // The queue was empty until now: the first waiter may wait the
        // whole interval, not only the target.
        let first = limiter.acquire(None).await;
        assert_eq!(first.unwrap_err(), Refusal::Overloaded);
        assert_eq!(Instant::now() - start, 100 * MS);
        // The queue emptied only by shedding, never by a slot handed over
        // (the holder has kept the one slot from the start): it still
        // stands, so each newcomer now waits only the target.
        for _ in 0..2 {
            let queued_at = Instant::now();
            let newcomer = limiter.acquire(None).await;
            assert_eq!(newcomer.unwrap_err(), Refusal::Overloaded);
            assert_eq!(Instant::now() - queued_at, 5 * MS);
            advance(100 * MS).await;
        }
    }

    /// A2: a client gone from a queue younger than the interval leaves an
    /// empty queue, not a standing one: a request that queues later may
    /// wait the whole interval again.
    #[tokio::test(start_paused = true)]
    async fn a_young_queue_its_waiter_left_is_not_congested() {
        let limiter = limiter(1);
        let _holder = limiter.acquire(None).await.unwrap();
        let mut gone = tokio_test::task::spawn(limiter.acquire(None));
        assert!(gone.poll().is_pending(), "queued");
        advance(10 * MS).await;
        drop(gone);
        advance(940 * MS).await;
        let queued_at = Instant::now();
        let later = limiter.acquire(None).await;
        assert_eq!(later.unwrap_err(), Refusal::Overloaded);
        assert_eq!(Instant::now() - queued_at, 100 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_leaves_the_queue_at_its_deadline() {
        let limiter = limiter(1);
        let _holder = limiter.acquire(None).await.unwrap();
        let deadline = Instant::now() + 30 * MS;
        let refusal = limiter.acquire(Some(deadline)).await.unwrap_err();
        assert_eq!(refusal, Refusal::Deadline);
        assert_eq!(Instant::now(), deadline);
        assert_eq!(limiter.snapshot(), (1, 1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slot_handed_over_after_the_waiters_deadline_goes_back() {
        let limiter = limiter(1);
        let holder = limiter.acquire(None).await.unwrap();
        let deadline = Instant::now() + 30 * MS;
        let mut waiting = tokio_test::task::spawn(limiter.acquire(Some(deadline)));
        assert!(waiting.poll().is_pending());
        // The deadline passes, and the slot frees before the waiter runs.
        advance(30 * MS).await;
        holder.answered();
        let Poll::Ready(result) = waiting.poll() else {
            panic!("the wait is over");
        };
        assert_eq!(result.unwrap_err(), Refusal::Deadline);
        assert_eq!(limiter.snapshot(), (1, 0, 0), "the slot is free");
    }

    /// A slot handed to a waiter that never takes it (or takes it after its
    /// deadline) goes back with no sample: Vegas does not learn a no-load
    /// latency of nothing, which would make every real request look queued
    /// and shrink the limit.
    #[tokio::test(start_paused = true)]
    async fn a_slot_no_request_used_teaches_vegas_nothing() {
        for late in [false, true] {
            let limiter = Limiter::new(Concurrency::Vegas, &QueueConfig::default()).unwrap();
            let (initial, _, _) = limiter.snapshot();
            let mut held: Vec<_> = (0..initial)
                .map(|_| match limiter.acquire(None) {
                    super::Acquire::Ready(Some(permit)) => permit,
                    _ => panic!("a free slot"),
                })
                .collect();
            let deadline = Instant::now() + 10 * MS;
            let mut gone = tokio_test::task::spawn(limiter.acquire(Some(deadline)));
            assert!(gone.poll().is_pending(), "queued");
            advance(10 * MS).await;
            // A 10 ms sample; its slot goes to `gone`.
            held.pop().unwrap().answered();
            if late {
                // Its deadline has passed by the time it takes the slot.
                let Poll::Ready(result) = gone.poll() else {
                    panic!("the wait is over");
                };
                assert_eq!(result.unwrap_err(), Refusal::Deadline);
            } else {
                drop(gone);
            }
            for permit in held {
                permit.answered();
            }
            assert_limit_kept(&limiter, initial, late).await;
        }
    }

    /// Ten rounds of requests that fill the limit and take 10 ms each, as
    /// the first did: the limit is not below `initial` after them.
    async fn assert_limit_kept(limiter: &Limiter, initial: usize, late: bool) {
        for _ in 0..10 {
            let (limit, _, _) = limiter.snapshot();
            let round: Vec<_> = (0..limit)
                .filter_map(|_| match limiter.acquire(None) {
                    super::Acquire::Ready(permit) => permit,
                    super::Acquire::Queued(_) => None,
                })
                .collect();
            advance(10 * MS).await;
            for permit in round {
                permit.answered();
            }
        }
        let (limit, _, _) = limiter.snapshot();
        assert!(limit >= initial, "late {late}: {limit} < {initial}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_dropped_leaves_the_queue_and_its_slot_goes_on() {
        let limiter = limiter(1);
        let holder = limiter.acquire(None).await.unwrap();
        let gone = limiter.acquire(None);
        let next = tokio::spawn(limiter.acquire(None));
        tokio::task::yield_now().await;
        assert_eq!(limiter.snapshot(), (1, 1, 2));
        drop(gone);
        assert_eq!(limiter.snapshot(), (1, 1, 1), "it left the queue");
        drop(holder);
        assert!(next.await.unwrap().is_ok());
        assert_eq!(limiter.snapshot(), (1, 0, 0));
    }
}
