//! [`Shared`]: the state one breaker's clones and permits share.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tracing::Span;

use super::state::Machine;
use super::transition::Transition;
use crate::observe::{BreakerCallOutcome, Event, Label, Observers};

/// The state every clone and every permit of one breaker share.
#[derive(Debug)]
pub(super) struct Shared {
    locked: Mutex<Locked>,
    /// The host the logs name.
    host: Box<str>,
    /// The host the events name (bounded, see `BoundedLabels`).
    label: Label,
    observers: Observers,
}

/// What the breaker's lock guards.
#[derive(Debug)]
struct Locked {
    machine: Machine,
    /// Events not told yet, oldest first: the breaker's making, the changes
    /// of state, and the calls counted while one was being told.
    untold: VecDeque<Untold>,
    /// Whether a thread is telling `untold`. One tells at a time, so every
    /// observer sees the events in the order the breaker made them, and
    /// without the lock held, so an observer may call the breaker again: an
    /// event it causes waits in `untold` until the one in hand is told.
    telling: bool,
}

/// An event not told yet.
#[derive(Debug)]
enum Untold {
    /// The breaker was made, closed: told with its first step, before
    /// anything that step made, so its state has a value from then on.
    Created,
    /// A counted call and the change of state it made (at least one of the
    /// two).
    Step {
        call: Option<BreakerCallOutcome>,
        transition: Option<Transition>,
        /// The span of the call that made it, when another thread was
        /// telling then and so tells it: its log lines and span events
        /// belong to that call's request, not the teller's.
        span: Option<Span>,
    },
}

impl Shared {
    pub(super) fn new(machine: Machine, host: &str, label: Label, observers: Observers) -> Self {
        let untold = if observers.is_listening() {
            VecDeque::from([Untold::Created])
        } else {
            VecDeque::new()
        };
        Self {
            locked: Mutex::new(Locked {
                machine,
                untold,
                telling: false,
            }),
            host: host.into(),
            label,
            observers,
        }
    }

    /// The state, also after a panic elsewhere poisoned the lock: no code
    /// panics while holding it, so the state is never half-updated.
    fn lock(&self) -> MutexGuard<'_, Locked> {
        self.locked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `step` on the state, then logs and tells the change of state it
    /// made, if any, once the lock is released.
    pub(super) fn run<R>(&self, step: impl FnOnce(&mut Machine) -> R) -> R {
        self.step(|machine| (step(machine), None))
    }

    /// Runs `step` on the state, then tells the call it counted, if any,
    /// and after it the change of state it made, if any, once the lock is
    /// released (and, at the breaker's first step, first that it was made).
    pub(super) fn step<R>(
        &self,
        step: impl FnOnce(&mut Machine) -> (R, Option<BreakerCallOutcome>),
    ) -> R {
        // Declared before the guard, so that a result that settles when
        // dropped (a permit) is dropped after the lock is released, also
        // when a panic unwinds from under it.
        let result;
        let call;
        let mut locked = self.lock();
        (result, call) = step(&mut locked.machine);
        let transition = locked.machine.take_transition();
        // A call no one hears of is not told; a change of state is logged.
        let call = call.filter(|_| self.observers.is_listening());
        if call.is_some() || transition.is_some() {
            // Told in turn, also a call alone: told without the turn, it
            // could be overtaken by a later call's change of state.
            let span = locked.telling.then(Span::current);
            locked.untold.push_back(Untold::Step {
                call,
                transition,
                span,
            });
        }
        // With nothing untold (the breaker's making is, before its first
        // step), nothing to tell; while another thread tells, it tells
        // what was pushed in turn.
        if locked.untold.is_empty() || locked.telling {
            return result;
        }
        locked.telling = true;
        drop(locked);
        self.tell_untold();
        result
    }

    /// Tells the events in `untold`, oldest first, until none is left; the
    /// caller has taken the turn to tell.
    fn tell_untold(&self) {
        let mut turn = Turn {
            shared: self,
            held: true,
        };
        while let Some(untold) = turn.next() {
            let (call, transition, span) = match untold {
                Untold::Created => {
                    self.observers.emit(|| Event::BreakerCreated {
                        host: self.label.clone(),
                    });
                    continue;
                }
                Untold::Step {
                    call,
                    transition,
                    span,
                } => (call, transition, span),
            };
            let _in_its_call = span.as_ref().map(Span::enter);
            if let Some(call) = call {
                self.told(call);
            }
            let Some(transition) = transition else {
                continue;
            };
            transition.log(&self.host);
            let (from, to) = transition.states();
            self.observers.emit(|| Event::BreakerTransition {
                host: self.label.clone(),
                from,
                to,
            });
        }
    }

    /// Tells how a call was counted.
    fn told(&self, outcome: BreakerCallOutcome) {
        self.observers.emit(|| Event::BreakerCall {
            host: self.label.clone(),
            outcome,
        });
    }
}

/// A thread's turn to tell the breaker's events. It ends when none is left
/// to tell, or when an observer panics: the breaker's next event then takes
/// the turn and tells what is left first.
struct Turn<'a> {
    shared: &'a Shared,
    held: bool,
}

impl Turn<'_> {
    /// The next event to tell; `None`, and the turn given up, when none is
    /// left.
    fn next(&mut self) -> Option<Untold> {
        let mut locked = self.shared.lock();
        let next = locked.untold.pop_front();
        if next.is_none() {
            locked.telling = false;
            self.held = false;
        }
        next
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.held {
            self.shared.lock().telling = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::mpsc::{self, Receiver, Sender};
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::Duration;

    use crate::breaker::{BreakerState, CircuitBreaker, Permit};
    use crate::config::BreakerConfig;
    use crate::observe::{Event, Observer, Observers, Recording};

    /// One failure opens the breaker, and the next look half-opens it.
    fn config() -> BreakerConfig {
        BreakerConfig {
            minimum_sample_count: 1,
            open_secs: 0,
            ..BreakerConfig::default()
        }
    }

    fn breaker(observers: Observers) -> CircuitBreaker {
        CircuitBreaker::observed("host", "host".into(), &config(), observers)
    }

    fn transitions(recording: &Recording) -> Vec<(BreakerState, BreakerState)> {
        recording
            .events()
            .into_iter()
            .filter_map(|event| match event {
                Event::BreakerTransition { from, to, .. } => Some((from, to)),
                _ => None,
            })
            .collect()
    }

    const OPENED_THEN_HALF_OPENED: [(BreakerState, BreakerState); 2] = [
        (BreakerState::Closed, BreakerState::Open),
        (BreakerState::Open, BreakerState::HalfOpen),
    ];

    fn is_opened(event: &Event) -> bool {
        matches!(
            event,
            Event::BreakerTransition {
                to: BreakerState::Open,
                ..
            }
        )
    }

    /// Looks at the breaker when told that it opened, which half-opens it.
    #[derive(Default)]
    struct LooksWhenOpened(OnceLock<CircuitBreaker>);

    impl Observer for LooksWhenOpened {
        fn on_event(&self, event: &Event) {
            if is_opened(event) {
                if let Some(breaker) = self.0.get() {
                    let _half_open = breaker.state();
                }
            }
        }
    }

    #[test]
    fn a_change_an_observer_causes_reaches_every_observer_after_the_one_in_hand() {
        let looks = Arc::new(LooksWhenOpened::default());
        let recording = Recording::new();
        let breaker = breaker(
            Observers::new()
                .with(Arc::clone(&looks))
                .with(recording.clone()),
        );
        assert!(looks.0.set(breaker.clone()).is_ok());
        breaker.try_acquire().expect("closed").failure();
        assert_eq!(transitions(&recording), OPENED_THEN_HALF_OPENED);
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
    }

    /// Holds the first event `held` picks until the test lets it go.
    struct HoldsTheFirst {
        held: fn(&Event) -> bool,
        telling: Mutex<Option<Sender<()>>>,
        go: Mutex<Receiver<()>>,
    }

    impl Observer for HoldsTheFirst {
        fn on_event(&self, event: &Event) {
            if !(self.held)(event) {
                return;
            }
            let Some(telling) = self.telling.lock().unwrap().take() else {
                return;
            };
            telling.send(()).unwrap();
            self.go
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10))
                .expect("the test lets the first change go");
        }
    }

    /// Opens a breaker of `config` on another thread, runs `meanwhile` on
    /// this one while that thread is telling the opening, then lets it
    /// go on; what the observer after the held one heard.
    fn while_the_opening_is_told(
        config: &BreakerConfig,
        meanwhile: impl FnOnce(&CircuitBreaker),
    ) -> Recording {
        while_told(is_opened, config, Permit::failure, meanwhile)
    }

    /// Settles a call of a breaker of `config` with `settle` on another
    /// thread, runs `meanwhile` on this one while that thread is telling
    /// the first event `held` picks, then lets it go on; what the observer
    /// after the held one heard.
    fn while_told(
        held: fn(&Event) -> bool,
        config: &BreakerConfig,
        settle: fn(Permit),
        meanwhile: impl FnOnce(&CircuitBreaker),
    ) -> Recording {
        let (telling_tx, telling) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let holds = HoldsTheFirst {
            held,
            telling: Mutex::new(Some(telling_tx)),
            go: Mutex::new(go_rx),
        };
        let recording = Recording::new();
        let breaker = CircuitBreaker::observed(
            "host",
            "host".into(),
            config,
            Observers::new().with(holds).with(recording.clone()),
        );
        let opening = std::thread::spawn({
            let breaker = breaker.clone();
            move || settle(breaker.try_acquire().expect("closed"))
        });
        telling
            .recv_timeout(Duration::from_secs(10))
            .expect("the held event is being told");
        meanwhile(&breaker);
        go.send(()).unwrap();
        opening.join().expect("the opening thread ends");
        recording
    }

    #[test]
    fn changes_made_on_two_threads_are_told_in_the_order_they_were_made() {
        // While the opening is told on the other thread, this one
        // half-opens the breaker.
        let recording = while_the_opening_is_told(&config(), |breaker| {
            assert_eq!(breaker.state(), BreakerState::HalfOpen);
        });
        assert_eq!(transitions(&recording), OPENED_THEN_HALF_OPENED);
    }

    /// The events `recording` heard, as `call <outcome>` and `<from> -> <to>`.
    fn told(recording: &Recording) -> Vec<String> {
        recording
            .events()
            .into_iter()
            .filter_map(|event| match event {
                Event::BreakerCall { outcome, .. } => Some(format!("call {outcome:?}")),
                Event::BreakerTransition { from, to, .. } => Some(format!("{from:?} -> {to:?}")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_call_refused_while_the_opening_is_told_is_told_after_it() {
        let config = BreakerConfig {
            minimum_sample_count: 1,
            ..BreakerConfig::default()
        };
        let recording = while_the_opening_is_told(&config, |breaker| {
            assert!(breaker.try_acquire().is_err(), "open for 60 s");
        });
        assert_eq!(
            told(&recording),
            ["call Failure", "Closed -> Open", "call Rejected"]
        );
    }

    #[test]
    fn a_call_is_told_before_the_opening_a_later_call_made() {
        let config = BreakerConfig {
            minimum_sample_count: 2,
            ..BreakerConfig::default()
        };
        let is_call = |event: &Event| matches!(event, Event::BreakerCall { .. });
        // While the success is told on the other thread, a failure here
        // makes one in two calls failed: the breaker opens.
        let recording = while_told(is_call, &config, Permit::success, |breaker| {
            breaker.try_acquire().expect("closed").failure();
        });
        assert_eq!(
            told(&recording),
            ["call Success", "call Failure", "Closed -> Open"]
        );
    }

    /// Panics at the first event `at` picks.
    struct PanicsOnce {
        at: fn(&Event) -> bool,
        panicked: Mutex<bool>,
    }

    impl PanicsOnce {
        fn at(at: fn(&Event) -> bool) -> Self {
            Self {
                at,
                panicked: Mutex::new(false),
            }
        }
    }

    impl Observer for PanicsOnce {
        fn on_event(&self, event: &Event) {
            let mut panicked = self.panicked.lock().unwrap();
            if (self.at)(event) && !*panicked {
                *panicked = true;
                drop(panicked);
                panic!("an observer's own failure");
            }
        }
    }

    #[test]
    fn the_making_is_told_once_at_the_first_step_before_all_it_made() {
        let recording = Recording::new();
        let breaker = breaker(Observers::new().with(recording.clone()));
        assert!(recording.events().is_empty(), "told at its first step");
        // Opened, then half-open at the next look, where one success of
        // the trials it needs does not close it yet.
        breaker.try_acquire().expect("closed").failure();
        breaker.try_acquire().expect("half-open").success();
        let names: Vec<&str> = recording.events().iter().map(Event::name).collect();
        assert_eq!(
            names,
            [
                "breaker_created",
                "breaker_call",
                "breaker_transition",
                "breaker_transition",
                "breaker_call",
            ]
        );
    }

    #[test]
    fn changes_are_still_told_after_an_observer_panicked() {
        let recording = Recording::new();
        let breaker = breaker(
            Observers::new()
                .with(recording.clone())
                .with(PanicsOnce::at(is_opened)),
        );
        let failed = catch_unwind(AssertUnwindSafe(|| {
            breaker.try_acquire().expect("closed").failure();
        }));
        assert!(failed.is_err(), "the observer's panic reaches the caller");
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        assert_eq!(transitions(&recording), OPENED_THEN_HALF_OPENED);
    }

    #[test]
    fn an_observer_panic_at_the_half_opening_frees_the_trial_slot_it_took() {
        let config = BreakerConfig {
            half_open_trials: 1,
            ..config()
        };
        let is_half_opened = |event: &Event| {
            matches!(
                event,
                Event::BreakerTransition {
                    to: BreakerState::HalfOpen,
                    ..
                }
            )
        };
        let recording = Recording::new();
        let observers = Observers::new()
            .with(recording.clone())
            .with(PanicsOnce::at(is_half_opened));
        let breaker = CircuitBreaker::observed("host", "host".into(), &config, observers);
        breaker.try_acquire().expect("closed").failure();
        // The look that half-opens the breaker takes its one trial slot,
        // and is where the observer panics.
        let trial = catch_unwind(AssertUnwindSafe(|| breaker.try_acquire()));
        assert!(trial.is_err(), "the observer's panic reaches the caller");
        breaker
            .try_acquire()
            .expect("the slot of the trial that never ran is free")
            .success();
        // The trial that never ran counted for nothing: it did not open
        // the breaker again.
        assert_eq!(
            transitions(&recording),
            [
                (BreakerState::Closed, BreakerState::Open),
                (BreakerState::Open, BreakerState::HalfOpen),
                (BreakerState::HalfOpen, BreakerState::Closed),
            ]
        );
    }

    /// Hears each call and change of state, with the name of the span it
    /// is told in.
    #[derive(Default)]
    struct Spans(Mutex<Vec<(String, Option<&'static str>)>>);

    impl Observer for Spans {
        fn on_event(&self, event: &Event) {
            let told = match event {
                Event::BreakerCall { outcome, .. } => format!("call {outcome:?}"),
                Event::BreakerTransition { from, to, .. } => format!("{from:?} -> {to:?}"),
                _ => return,
            };
            let span = tracing::Span::current().metadata().map(|m| m.name());
            self.0.lock().unwrap().push((told, span));
        }
    }

    #[test]
    fn what_a_call_made_is_told_in_its_span_also_by_another_thread() {
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry());
        let (telling_tx, telling) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let holds = HoldsTheFirst {
            held: is_opened,
            telling: Mutex::new(Some(telling_tx)),
            go: Mutex::new(go_rx),
        };
        let spans = Arc::new(Spans::default());
        let observers = Observers::new().with(holds).with(Arc::clone(&spans));
        let breaker = CircuitBreaker::observed("host", "host".into(), &config(), observers);
        let opening = std::thread::spawn({
            let breaker = breaker.clone();
            let dispatch = dispatch.clone();
            move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    let span = tracing::info_span!("first");
                    span.in_scope(|| breaker.try_acquire().expect("closed").failure());
                });
            }
        });
        telling
            .recv_timeout(Duration::from_secs(10))
            .expect("the opening is being told");
        // While the other thread tells the opening, this call half-opens
        // the breaker and succeeds: the other thread tells both.
        tracing::dispatcher::with_default(&dispatch, || {
            let span = tracing::info_span!("second");
            span.in_scope(|| breaker.try_acquire().expect("half-open").success());
        });
        go.send(()).unwrap();
        opening.join().expect("the opening thread ends");
        let told = spans.0.lock().unwrap().clone();
        let expected = [
            ("call Failure", "first"),
            ("Closed -> Open", "first"),
            ("Open -> HalfOpen", "second"),
            ("call Success", "second"),
        ]
        .map(|(told, span)| (told.to_owned(), Some(span)));
        assert_eq!(told, expected);
    }
}
