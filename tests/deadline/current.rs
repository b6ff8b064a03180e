//! D2: the current deadline is task-local; `Deadline::current()` is `None`
//! outside any scope and never panics, also outside a runtime.

use super::*;

#[test]
fn there_is_no_current_deadline_on_a_test_thread_without_a_runtime() {
    assert_eq!(Deadline::current(), None);
}

#[tokio::test(start_paused = true)]
async fn there_is_no_current_deadline_in_a_runtime_outside_any_scope() {
    assert_eq!(Deadline::current(), None);
}

#[test]
fn there_is_no_current_deadline_in_a_plain_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime builds");
    assert_eq!(runtime.block_on(async { Deadline::current() }), None);
}

#[test]
fn there_is_no_current_deadline_on_a_plain_thread() {
    let seen = std::thread::spawn(Deadline::current)
        .join()
        .expect("Deadline::current must not panic on a plain thread");
    assert_eq!(seen, None);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_gone_once_its_scope_has_finished() {
    let deadline = Deadline::after(ONE);
    let inside = deadline.scope(async { Deadline::current() }).await;
    assert_eq!(inside, Some(deadline));
    assert_eq!(Deadline::current(), None);
}
