//! D3: a scope runs its future with `min(deadline, enclosing)` current, read
//! afresh at every poll: a scope can only shorten. `sync_scope` likewise.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_longer_scope_inside_a_shorter_one_sees_the_shorter_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let seen = one.scope(five.scope(async { Deadline::current() })).await;
    assert_eq!(seen, Some(one));
}

#[tokio::test(start_paused = true)]
async fn a_shorter_scope_inside_a_longer_one_sees_the_shorter_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let seen = five.scope(one.scope(async { Deadline::current() })).await;
    assert_eq!(seen, Some(one));
}

#[tokio::test(start_paused = true)]
async fn a_scope_built_outside_a_shorter_scope_sees_the_shorter_one_when_polled_in_it() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let fut = five.scope(async { Deadline::current() });
    assert_eq!(one.scope(fut).await, Some(one));
}

#[tokio::test(start_paused = true)]
async fn sync_scope_can_only_shorten_and_restores_the_enclosing_deadline() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);

    assert_eq!(one.sync_scope(Deadline::current), Some(one));
    assert_eq!(
        five.sync_scope(|| one.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(
        one.sync_scope(|| five.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(Deadline::current(), None);

    let in_async_scope = five
        .scope(async {
            let shortened = one.sync_scope(Deadline::current);
            let not_lengthened = five.sync_scope(|| {
                Deadline::after(Duration::from_secs(9)).sync_scope(Deadline::current)
            });
            (shortened, not_lengthened, Deadline::current())
        })
        .await;
    assert_eq!(in_async_scope, (Some(one), Some(five), Some(five)));
    assert_eq!(Deadline::current(), None);
}

#[test]
fn sync_scope_works_without_a_runtime() {
    let one = Deadline::after(ONE);
    let five = one.instant() + Duration::from_secs(4);
    let five = Deadline::at(five);
    assert_eq!(
        five.sync_scope(|| one.sync_scope(Deadline::current)),
        Some(one)
    );
    assert_eq!(Deadline::current(), None);
}

#[test]
fn a_panic_inside_a_scope_does_not_leave_its_deadline_current() {
    let outer = Deadline::after(Duration::from_secs(5));
    let inner = Deadline::after(ONE);
    let seen_after_panic = outer.sync_scope(|| {
        let caught = std::panic::catch_unwind(|| inner.sync_scope(|| panic!("inside the scope")));
        assert!(caught.is_err());
        Deadline::current()
    });
    assert_eq!(seen_after_panic, Some(outer));
    assert_eq!(Deadline::current(), None);
}

#[tokio::test(start_paused = true)]
async fn a_scope_reads_the_enclosing_deadline_again_at_every_poll() {
    let one = Deadline::after(ONE);
    let five = Deadline::after(FIVE);
    let (tx, rx) = oneshot::channel::<()>();
    let mut fut = pin!(five.scope(async move {
        let at_first_poll = Deadline::current();
        rx.await.expect("the sender is not dropped");
        let at_second_poll = Deadline::current();
        (at_first_poll, at_second_poll)
    }));

    // First poll, outside any other scope: the scope's own deadline.
    let first = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    assert!(first.is_pending());

    // Second poll, inside a shorter scope: the shorter deadline.
    tx.send(()).expect("the receiver is alive");
    let (at_first_poll, at_second_poll) = one.scope(fut).await;
    assert_eq!(at_first_poll, Some(five));
    assert_eq!(at_second_poll, Some(one));
}
