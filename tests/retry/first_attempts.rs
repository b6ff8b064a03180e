//! B2: a first attempt never waits for tokens, seen from the client: whatever
//! state the host's bucket is in (full, drained, or anywhere after earlier
//! calls), every call's first attempt reaches the upstream. The breaker is kept
//! out (its sample count is never reached), so only the budget could hold an
//! attempt back.

use super::strategies::config;
use super::*;

/// What the upstream does with one attempt.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    Refuse,
}

/// An upstream reached through the client's transport: answers attempts in
/// order from a script (503 once it runs out) and records which call each
/// attempt belonged to, by its `x-call` header.
#[derive(Debug, Default)]
struct Upstream {
    script: Mutex<VecDeque<Answer>>,
    calls_seen: Mutex<Vec<usize>>,
}

impl Transport for Upstream {
    fn send(&self, request: http::Request<Bytes>) -> TransportFuture {
        let call = request.headers()["x-call"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        self.calls_seen.lock().unwrap().push(call);
        let answer = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Answer::Status(503));
        Box::pin(async move {
            match answer {
                Answer::Refuse => Err(TransportError::Connect("connection refused".into())),
                Answer::Status(status) => Ok(http::Response::builder()
                    .status(status)
                    .body(ResponseBody::from_stream(stream::empty::<
                        Result<Bytes, Infallible>,
                    >()))
                    .unwrap()),
            }
        })
    }
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Status(200)),
        Just(Answer::Status(404)),
        Just(Answer::Status(429)),
        Just(Answer::Status(500)),
        Just(Answer::Status(503)),
        Just(Answer::Refuse),
    ]
}

/// One call: its method, and whether the host's bucket is drained (by other
/// callers' retries) just before it.
fn call() -> impl Strategy<Value = (Method, bool)> {
    (
        prop_oneof![3 => Just(Method::GET), 1 => Just(Method::POST)],
        prop::bool::weighted(0.3),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_first_attempt_reaches_the_upstream_whatever_the_budget_holds(
        budget in config(),
        max_retries in 0u64..=4,
        script in prop::collection::vec(answer(), 0..120),
        calls in prop::collection::vec(call(), 1..40),
    ) {
        let mut config = Config::default();
        config.http.client.retry_budget = budget;
        config.http.client.max_retries = max_retries;
        config.breaker.minimum_sample_count = u32::MAX;
        let upstream = Arc::new(Upstream {
            script: Mutex::new(script.into()),
            ..Upstream::default()
        });
        let client = Client::builder().config(&config)
            .transport(upstream.clone())
            .entropy(Entropy::seeded(1))
            .build();
        let bucket = client.budgets().for_uri(&uri("http://up.example/")).unwrap();

        let runtime = support::paused_runtime();
        runtime.block_on(async {
            for (i, (method, drain_first)) in calls.iter().enumerate() {
                if *drain_first {
                    drain(&bucket, THROTTLING);
                    drain(&bucket, TRANSIENT);
                }
                let tokens = bucket.tokens();
                let before = upstream.calls_seen.lock().unwrap().len();
                let _ = client
                    .request(method.clone(), "http://up.example/")
                    .header("x-call", i.to_string())
                    .send()
                    .await;
                let seen = upstream.calls_seen.lock().unwrap();
                let attempts = &seen[before..];
                prop_assert!(
                    !attempts.is_empty(),
                    "call {} ({}) with {} tokens in the bucket never reached the upstream",
                    i, method, tokens
                );
                prop_assert!(attempts.iter().all(|&call| call == i), "{:?}", attempts);
                prop_assert!(attempts.len() as u64 <= max_retries + 1, "{:?}", attempts);
            }
            Ok::<(), TestCaseError>(())
        })?;
    }
}
