//! Configuration and errors.

use super::*;

#[tokio::test(start_paused = true)]
async fn the_default_stream_config_has_no_inactivity_timer_and_ends_at_900s() {
    let watchdog = Watchdog::from_config(&StreamConfig::default());
    assert_eq!(watchdog.first_item_timeout(), Some(secs(90)));
    assert_eq!(watchdog.inactivity_timeout(), None);
    assert_eq!(watchdog.total_timeout(), Some(secs(900)));

    let script = Script::start(watchdog);
    script.send(Ok(1));
    assert_eq!(
        script.seen().await,
        [
            (secs(0), ok(1)),
            (secs(900), Timeout(Total)),
            (secs(900), End),
        ]
    );
}

#[test]
fn zero_in_the_stream_config_turns_a_timer_off() {
    let config = StreamConfig {
        first_chunk_timeout_secs: 0,
        stream_timeout_secs: 0,
        stream_inactivity_timeout_secs: 30,
        ..StreamConfig::default()
    };
    assert_eq!(
        Watchdog::from_config(&config),
        Watchdog::new().inactivity(secs(30))
    );
}

#[tokio::test(start_paused = true)]
async fn timeouts_name_their_cause_in_lowercase() {
    async fn timeout_of(watchdog: Watchdog, items: Vec<u32>) -> StreamTimeout {
        let watched = stream::iter(items)
            .chain(stream::pending())
            .watchdog(watchdog);
        let mut watched = pin!(watched);
        loop {
            if let Err(timeout) = watched.next().await.unwrap() {
                return timeout;
            }
        }
    }

    let first = timeout_of(Watchdog::new().first_item(secs(90)), vec![]).await;
    let idle = timeout_of(inactivity_30s(), vec![1]).await;
    let total = timeout_of(Watchdog::new().total(secs(900)), vec![1]).await;
    assert_eq!(
        (first.kind(), idle.kind(), total.kind()),
        (FirstItem, Inactivity, Total)
    );
    assert_eq!(
        first.to_string(),
        "stream timed out: no first item within 90s"
    );
    assert_eq!(idle.to_string(), "stream timed out: no activity for 30s");
    assert_eq!(
        total.to_string(),
        "stream timed out: still running after 900s"
    );
    assert_eq!(idle.limit(), secs(30));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(total);
    assert_eq!(boxed.to_string(), total.to_string());
}
