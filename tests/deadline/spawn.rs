//! D4: `tokio::spawn` does not carry the deadline; `deadline.scope(..)` carries
//! it on purpose; `unscoped` runs with none. `spawn_blocking` does not carry
//! it either; `sync_scope` carries it into the closure.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_task_spawned_inside_a_scope_sees_no_deadline() {
    let one = Deadline::after(ONE);
    let (in_scope, in_task) = one
        .scope(async {
            let task = tokio::spawn(async { Deadline::current() });
            (
                Deadline::current(),
                task.await.expect("the task does not panic"),
            )
        })
        .await;
    assert_eq!(in_scope, Some(one));
    assert_eq!(in_task, None);
}

#[tokio::test(start_paused = true)]
async fn a_spawned_task_wrapped_in_the_scope_sees_the_deadline() {
    let one = Deadline::after(ONE);
    let in_task = one
        .scope(async {
            let deadline = Deadline::current().expect("inside the scope");
            tokio::spawn(deadline.scope(async { Deadline::current() }))
                .await
                .expect("the task does not panic")
        })
        .await;
    assert_eq!(in_task, Some(one));
}

#[tokio::test(start_paused = true)]
async fn bounded_work_in_a_task_spawned_inside_a_scope_is_not_stopped_by_it() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(async {
            tokio::spawn(bounded(async {
                sleep(Duration::from_secs(3)).await;
                7
            }))
            .await
            .expect("the task does not panic")
        })
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn unscoped_work_inside_a_scope_sees_no_deadline() {
    let one = Deadline::after(ONE);
    let (in_scope, in_unscoped) = one
        .scope(async {
            (
                Deadline::current(),
                unscoped(async { Deadline::current() }).await,
            )
        })
        .await;
    assert_eq!(in_scope, Some(one));
    assert_eq!(in_unscoped, None);
}

#[tokio::test(start_paused = true)]
async fn an_unscoped_stream_sees_no_deadline_at_any_poll() {
    use futures_util::{Stream, StreamExt};

    let items = futures_util::stream::iter(0..3).map(|_| Deadline::current());
    let seen: Vec<_> = Deadline::after(ONE)
        .scope(unscoped(items).collect::<Vec<_>>())
        .await;
    assert_eq!(seen, [None, None, None]);
    assert_eq!(
        unscoped(futures_util::stream::iter(0..3)).size_hint(),
        (3, Some(3))
    );
}

#[tokio::test(start_paused = true)]
async fn bounded_work_inside_unscoped_runs_to_completion_past_the_outer_deadline() {
    let start = Instant::now();
    let result = Deadline::after(ONE)
        .scope(unscoped(bounded(async {
            sleep(Duration::from_secs(3)).await;
            7
        })))
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

/// A current-thread runtime's `block_on` polls its tasks inside the caller's
/// scope: they are still tasks of their own.
#[test]
fn a_task_spawned_under_a_block_on_inside_a_scope_sees_no_deadline() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let one = runtime.block_on(async { Deadline::after(ONE) });
    let (in_block_on, in_task) = one.sync_scope(|| {
        runtime.block_on(async {
            let task = tokio::spawn(async { Deadline::current() });
            (
                Deadline::current(),
                task.await.expect("the task does not panic"),
            )
        })
    });
    assert_eq!(in_block_on, Some(one));
    assert_eq!(in_task, None);
}

#[tokio::test(start_paused = true)]
async fn a_task_of_a_local_set_run_inside_a_scope_sees_no_deadline() {
    let local = tokio::task::LocalSet::new();
    let one = Deadline::after(ONE);
    let (in_run, in_task) = one
        .scope(local.run_until(async {
            let task = tokio::task::spawn_local(async { Deadline::current() });
            (
                Deadline::current(),
                task.await.expect("the task does not panic"),
            )
        }))
        .await;
    assert_eq!(in_run, Some(one));
    assert_eq!(in_task, None);
}

/// What a `spawn_blocking` closure's `Handle::block_on` sees as the current
/// deadline, without and then with `sync_scope` around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn spawn_blocking_carries_the_deadline_only_through_sync_scope() {
    let one = Deadline::after(Duration::from_secs(60));
    let seen = one
        .scope(async {
            let deadline = Deadline::current().expect("inside the scope");
            let handle = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                let without = handle.block_on(async { Deadline::current() });
                let with = deadline.sync_scope(|| handle.block_on(async { Deadline::current() }));
                (without, with)
            })
            .await
            .expect("the closure does not panic")
        })
        .await;
    assert_eq!(seen, (None, Some(one)));
}

/// A future several requests share is given a deadline of its own outside
/// theirs: polled from a request with less time left, it keeps its own.
#[tokio::test(start_paused = true)]
async fn a_future_given_its_own_deadline_outside_the_requests_keeps_it() {
    let own = Deadline::after(Duration::from_secs(60));
    let lookup = unscoped(own.scope(async { Deadline::current() }));
    let seen = Deadline::after(ONE).scope(lookup).await;
    assert_eq!(seen, Some(own));
}
