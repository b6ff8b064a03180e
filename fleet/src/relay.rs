//! The relay: a tonic service that calls the leaf with timebox's client.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use timebox::client::Client;
use timebox::config::Config;
use tonic::{Request, Response, Status};

use crate::pb::relay_server;
use crate::pb::{ForwardReply, ForwardRequest, WaitReply, WaitRequest};
use crate::remaining_ms;

/// The relay's state: its HTTP client, the leaf's URL, and how many of its
/// handlers were dropped before they finished.
#[derive(Debug, Clone)]
pub struct Relay {
    client: Client,
    leaf: String,
    dropped: Arc<AtomicUsize>,
}

impl Relay {
    /// A relay that forwards to `leaf`.
    #[must_use]
    pub fn new(config: &Config, leaf: String) -> Self {
        Self {
            client: Client::new(config),
            leaf,
            dropped: Arc::default(),
        }
    }

    /// How many handlers were dropped before they finished: what the
    /// server layer does to a call whose deadline passed. A handler that
    /// answers, with an error too, is not counted.
    #[must_use]
    pub fn dropped(&self) -> usize {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Calls the leaf and reports the deadlines both hops were given.
    async fn call_leaf(&self) -> Result<ForwardReply, Status> {
        let relay_deadline_ms = remaining_ms();
        // The client sends what is left in `x-timebox-deadline-ms`; a
        // `ClientError` becomes a `Status` with `?`.
        let response = self.client.get(&self.leaf).send().await?;
        let status = response.status();
        let leaf_status = u32::from(status.as_u16());
        let text = response.text().await?;
        let leaf_deadline_ms = match text.trim().parse() {
            Ok(ms) => ms,
            // An error page says nothing of the deadline: its status, which
            // the front shows, says what happened.
            Err(_) if !status.is_success() => -1,
            Err(_) => {
                let said: String = text.chars().take(64).collect();
                return Err(Status::internal(format!(
                    "the leaf answered {said:?}, not the milliseconds it was given"
                )));
            }
        };
        Ok(ForwardReply {
            relay_deadline_ms,
            leaf_deadline_ms,
            leaf_status,
        })
    }
}

#[tonic::async_trait]
impl relay_server::Relay for Relay {
    async fn forward(
        &self,
        _request: Request<ForwardRequest>,
    ) -> Result<Response<ForwardReply>, Status> {
        let unfinished = Unfinished::new(&self.dropped);
        let reply = self.call_leaf().await;
        unfinished.finish();
        reply.map(Response::new)
    }

    async fn wait(&self, request: Request<WaitRequest>) -> Result<Response<WaitReply>, Status> {
        let unfinished = Unfinished::new(&self.dropped);
        let deadline_ms = remaining_ms();
        tokio::time::sleep(Duration::from_millis(request.get_ref().millis)).await;
        unfinished.finish();
        Ok(Response::new(WaitReply { deadline_ms }))
    }

    type TicksStream = Ticks;

    async fn ticks(&self, request: Request<WaitRequest>) -> Result<Response<Ticks>, Status> {
        let every = Duration::from_millis(request.get_ref().millis.max(1));
        let ticks = futures_util::stream::unfold((), move |()| async move {
            tokio::time::sleep(every).await;
            let reply = WaitReply {
                deadline_ms: remaining_ms(),
            };
            Some((Ok(reply), ()))
        });
        Ok(Response::new(Box::pin(ticks)))
    }
}

/// The stream of [`Relay::ticks`](relay_server::Relay::ticks).
pub type Ticks = Pin<Box<dyn Stream<Item = Result<WaitReply, Status>> + Send>>;

/// Counts a handler dropped before it called [`finish`](Self::finish).
struct Unfinished<'a> {
    dropped: &'a AtomicUsize,
    finished: bool,
}

impl<'a> Unfinished<'a> {
    fn new(dropped: &'a AtomicUsize) -> Self {
        Self {
            dropped,
            finished: false,
        }
    }

    fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}
