//! Which end of a call a [`GrpcBody`](super::GrpcBody) is read at
//! ([`Side`]), and who hears of its deadline passing ([`Told`]).

use crate::deadline::{Deadline, PEER_LEAD};
use crate::observe::{deadline_told, Event, Label, Observers, Stage};

/// Who hears of a call's deadline passing, and the route they name (the
/// method, on the server).
#[derive(Debug, Clone, Default)]
pub(crate) struct Told {
    pub(crate) observers: Observers,
    pub(crate) route: Option<Label>,
}

impl Told {
    /// Tells that the deadline passed at `stage`.
    pub(crate) fn exceeded(&self, stage: Stage) {
        self.observers.emit(|| Event::DeadlineExceeded {
            stage,
            route: self.route.clone(),
        });
        deadline_told();
    }
}

/// Which end of the call the body is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Written to the network by a server.
    Server,
    /// Read by a client that sent a `grpc-timeout` ending at `sent`: an
    /// error or a `CANCELLED` from then on is the deadline's (tonic's
    /// channel enforces the header itself, with `CANCELLED`).
    Client { sent: Deadline },
}

impl Side {
    /// Whether a failure now is the deadline's, on the client.
    pub(crate) fn client_past_sent(self) -> bool {
        matches!(self, Self::Client { sent } if sent.is_expired())
    }

    /// Whether a peer's `DEADLINE_EXCEEDED` now answers the time sent, on
    /// the client, rather than a deadline of the peer's own: it comes no
    /// more than [`PEER_LEAD`] before that time runs out.
    pub(crate) fn client_near_sent(self) -> bool {
        matches!(self, Self::Client { sent } if sent.remaining() <= PEER_LEAD)
    }
}
