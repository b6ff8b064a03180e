//! A reference model of the watchdog (W1–W4): what a stream under its
//! timers must yield after every step, and the runner that checks it.

use super::*;

/// What a test step does before it looks at the stream.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    /// An item becomes ready in the inner stream (yielded at the next
    /// `Next` look).
    Send,
    Touch,
    /// `handle.suspend()`, the guard kept.
    Suspend,
    /// Drops one of the kept guards (the one at this index, modulo how many
    /// there are); nothing when none is kept.
    Resume(usize),
    /// Moves the paused clock on by this many milliseconds.
    Advance(u64),
}

/// How a step looks at the stream afterwards.
#[derive(Debug, Clone, Copy)]
pub(super) enum Look {
    /// `poll_next`: the consumer reads.
    Next,
    /// `poll_timed_out`: a producer whose send is blocked asks only whether
    /// a timer fired.
    TimedOut,
    /// Nothing looks: the consumer is busy elsewhere, so a window may run
    /// out with nobody polling to see it.
    Away,
}

/// The watchdog's rules, written out plainly, in milliseconds since the
/// start.
#[derive(Debug)]
pub(super) struct Model {
    first_item: Option<u64>,
    inactivity: Option<u64>,
    total: Option<u64>,
    now: u64,
    /// Where the silence window (first item, then inactivity) runs from.
    since: u64,
    seen_item: bool,
    suspensions: usize,
    /// Whether a touch or a suspension came after the silence window had
    /// run out: the timeout stands (W4: the timers do not wait for the
    /// consumer).
    lapsed: bool,
    queued: std::collections::VecDeque<u32>,
}

impl Model {
    pub(super) fn new(
        first_item: Option<u64>,
        inactivity: Option<u64>,
        total: Option<u64>,
    ) -> Self {
        // W1: zero means off.
        let on = |window: Option<u64>| window.filter(|&ms| ms > 0);
        Self {
            first_item: on(first_item),
            inactivity: on(inactivity),
            total: on(total),
            now: 0,
            since: 0,
            seen_item: false,
            suspensions: 0,
            lapsed: false,
            queued: std::collections::VecDeque::new(),
        }
    }

    /// The silence timer armed now: its deadline, kind and window.
    fn silence(&self) -> Option<(u64, TimeoutKind, u64)> {
        // W3: a suspension holds the silence timer, never the total one,
        // and not one that ran out before it began.
        if self.suspensions > 0 && !self.lapsed {
            None
        } else if self.seen_item {
            self.inactivity
                .map(|window| (self.since + window, Inactivity, window))
        } else {
            // W2: the first-item window until the first item.
            self.first_item
                .map(|window| (self.since + window, FirstItem, window))
        }
    }

    /// Whether the silence window has run out by now (once it has, it
    /// stays so).
    fn lapse(&mut self) -> bool {
        if !self.lapsed {
            self.lapsed = self
                .silence()
                .is_some_and(|(deadline, _, _)| self.now >= deadline);
        }
        self.lapsed
    }

    /// The timer that has fired by now, with its window.
    pub(super) fn timed_out(&self) -> Option<(TimeoutKind, u64)> {
        let silence = self.silence();
        let total = self.total.map(|limit| (limit, Total, limit));
        // On a tie the silence timer is named: a stall is the more telling
        // cause.
        let earliest = match (silence, total) {
            (Some(silence), Some(total)) if total.0 < silence.0 => Some(total),
            (Some(silence), _) => Some(silence),
            (None, total) => total,
        };
        earliest
            .filter(|&(deadline, _, _)| self.now >= deadline)
            .map(|(_, kind, window)| (kind, window))
    }

    pub(super) fn item(&mut self) {
        self.since = self.now;
        self.seen_item = true;
        self.lapsed = false;
    }

    pub(super) fn touch(&mut self) {
        // W3: touches do nothing while suspended, nor before the first item;
        // W4: nor once the window has run out.
        if self.suspensions == 0 && self.seen_item && !self.lapse() {
            self.since = self.now;
        }
    }

    pub(super) fn suspend(&mut self) {
        if self.suspensions == 0 {
            self.lapse();
        }
        self.suspensions += 1;
    }

    pub(super) fn resume(&mut self) {
        self.suspensions -= 1;
        if self.suspensions == 0 && !self.lapsed {
            self.since = self.now;
        }
    }
}

pub(super) fn window() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![1 => Just(None), 4 => (0u64..=60).prop_map(Some)]
}

pub(super) fn step() -> impl Strategy<Value = (Op, Look)> {
    let op = prop_oneof![
        3 => Just(Op::Send),
        2 => Just(Op::Touch),
        1 => Just(Op::Suspend),
        1 => any::<usize>().prop_map(Op::Resume),
        5 => (0u64..=25).prop_map(Op::Advance),
    ];
    let look = prop_oneof![
        3 => Just(Look::Next),
        1 => Just(Look::TimedOut),
        1 => Just(Look::Away),
    ];
    (op, look)
}

/// Runs `steps` against a real watched stream and the model; the error says
/// at which step they parted.
pub(super) fn run_against_model(
    (first_item, inactivity, total): (Option<u64>, Option<u64>, Option<u64>),
    steps: &[(Op, Look)],
) -> Result<(), TestCaseError> {
    let ms = Duration::from_millis;
    let runtime = support::paused_runtime();
    runtime.block_on(async {
        let watchdog = Watchdog::new()
            .first_item(first_item.map(ms))
            .inactivity(inactivity.map(ms))
            .total(total.map(ms));
        let (tx, mut rx) = mpsc::unbounded_channel::<u32>();
        let items = stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut watched = items.watchdog(watchdog);
        let handle = watched.handle();
        let mut model = Model::new(first_item, inactivity, total);
        let mut kept = Vec::new();
        let mut next_item = 0;
        let mut cx = Context::from_waker(Waker::noop());

        for (i, &(op, look)) in steps.iter().enumerate() {
            match op {
                Op::Send => {
                    tx.send(next_item).unwrap();
                    model.queued.push_back(next_item);
                    next_item += 1;
                }
                Op::Touch => {
                    handle.touch();
                    model.touch();
                }
                Op::Suspend => {
                    kept.push(handle.suspend());
                    model.suspend();
                }
                Op::Resume(index) => {
                    if !kept.is_empty() {
                        drop(kept.remove(index % kept.len()));
                        model.resume();
                    }
                }
                Op::Advance(by) => {
                    tokio::time::advance(ms(by)).await;
                    model.now += by;
                }
            }

            let expected = model.timed_out();
            let timeout = match look {
                Look::Away => continue,
                Look::TimedOut => match Pin::new(&mut watched).poll_timed_out(&mut cx) {
                    Poll::Ready(timeout) => Some(timeout),
                    Poll::Pending => None,
                },
                Look::Next => match Pin::new(&mut watched).poll_next(&mut cx) {
                    Poll::Ready(Some(Err(timeout))) => Some(timeout),
                    Poll::Ready(Some(Ok(item))) => {
                        prop_assert_eq!(
                            Some(item),
                            model.queued.pop_front(),
                            "step {} at {} ms: {:?}",
                            i,
                            model.now,
                            model
                        );
                        model.item();
                        None
                    }
                    Poll::Ready(None) => {
                        return Err(TestCaseError::fail(format!(
                            "step {i}: the stream ended without a timeout"
                        )))
                    }
                    Poll::Pending => {
                        prop_assert!(
                            model.queued.is_empty(),
                            "step {}: an item was ready but not yielded",
                            i
                        );
                        None
                    }
                },
            };
            prop_assert_eq!(
                timeout.map(|t| (t.kind(), t.limit())),
                expected.map(|(kind, window)| (kind, ms(window))),
                "step {} ({:?}, {:?}) at {} ms: {:?}",
                i,
                op,
                look,
                model.now,
                model
            );
            if let Some(timeout) = timeout {
                // The timeout is latched: a reader that only asked
                // `timed_out` still gets it from the stream, then the end.
                if let Look::TimedOut = look {
                    let next = Pin::new(&mut watched).poll_next(&mut cx);
                    prop_assert_eq!(next, Poll::Ready(Some(Err(timeout))));
                }
                let after = Pin::new(&mut watched).poll_next(&mut cx);
                prop_assert_eq!(
                    after,
                    Poll::Ready(None),
                    "the stream ends after its timeout"
                );
                prop_assert!(watched.is_terminated());
                return Ok(());
            }
        }
        Ok(())
    })
}
