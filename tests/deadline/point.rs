//! D1: a `Deadline` is a `Copy + Ord` point on tokio's clock; `after`
//! saturates; `remaining` is zero once passed; a deadline at now is expired.

use super::*;

#[tokio::test(start_paused = true)]
async fn remaining_counts_down_with_the_clock_and_stays_at_zero() {
    let deadline = Deadline::after(FIVE);
    assert_eq!(deadline.remaining(), FIVE);
    assert!(!deadline.is_expired());

    advance(Duration::from_secs(2)).await;
    assert_eq!(deadline.remaining(), Duration::from_secs(3));
    assert!(!deadline.is_expired());

    advance(Duration::from_secs(3)).await;
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(deadline.is_expired());

    advance(Duration::from_secs(7)).await;
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(deadline.is_expired());
}

#[tokio::test(start_paused = true)]
async fn a_deadline_after_duration_max_does_not_panic_and_is_far_away() {
    let deadline = Deadline::after(Duration::MAX);
    assert!(!deadline.is_expired());
    assert!(
        deadline.remaining() > Duration::from_secs(86_400 * 365 * 10),
        "remaining is only {:?}",
        deadline.remaining()
    );
    assert!(deadline > Deadline::after(Duration::from_secs(86_400 * 365)));
}

/// D1: the saturation is monotone: a timeout the clock could still add
/// (146 billion years) gives no later deadline than `Duration::MAX`, and none
/// earlier than a shorter timeout.
#[tokio::test(start_paused = true)]
async fn a_longer_timeout_never_gives_an_earlier_deadline() {
    let huge = Duration::from_secs(u64::MAX / 4);
    assert!(Deadline::after(Duration::MAX) >= Deadline::after(huge));
    assert!(Deadline::after(huge) >= Deadline::after(Duration::from_secs(86_400 * 365 * 29)));
}

#[tokio::test(start_paused = true)]
async fn work_under_a_duration_max_deadline_runs_to_the_end() {
    let start = Instant::now();
    let result = Deadline::after(Duration::MAX)
        .scope(bounded(async {
            sleep(Duration::from_secs(10)).await;
            7
        }))
        .await;
    assert_eq!(result, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_at_now_is_already_expired() {
    let deadline = Deadline::at(Instant::now());
    assert!(deadline.is_expired());
    assert_eq!(deadline.remaining(), Duration::ZERO);
    assert!(Deadline::after(Duration::ZERO).is_expired());
}

#[tokio::test(start_paused = true)]
async fn clamp_is_the_smaller_of_the_limit_and_the_time_left() {
    let deadline = Deadline::after(FIVE);
    advance(Duration::from_secs(2)).await;

    assert_eq!(
        deadline.clamp(Duration::from_secs(30)),
        Duration::from_secs(3)
    );
    assert_eq!(deadline.clamp(ONE), ONE);
    assert_eq!(
        deadline.clamp(Duration::from_secs(3)),
        Duration::from_secs(3)
    );
    assert_eq!(deadline.clamp(Duration::ZERO), Duration::ZERO);

    advance(Duration::from_secs(4)).await;
    assert_eq!(deadline.clamp(ONE), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn the_earlier_deadline_is_the_smaller_and_min_picks_it() {
    fn assert_copy_and_ord<T: Copy + Ord>() {}
    assert_copy_and_ord::<Deadline>();

    let early = Deadline::after(ONE);
    let late = Deadline::after(FIVE);
    assert!(early < late);
    assert!(late > early);
    assert_ne!(early, late);
    assert_eq!(early.min(late), early);
    assert_eq!(late.min(early), early);
    assert_eq!(early.max(late), late);
    assert_eq!(Deadline::after(ONE), early);
}

#[tokio::test(start_paused = true)]
async fn instant_returns_the_point_the_deadline_was_made_at() {
    let at = Instant::now() + Duration::from_millis(1500);
    assert_eq!(Deadline::at(at).instant(), at);
    assert_eq!(Deadline::after(FIVE).instant(), Instant::now() + FIVE);
}
