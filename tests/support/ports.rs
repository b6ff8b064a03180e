//! Loopback ports for tests that need one nothing answers on.

use std::net::SocketAddr;

/// A port of 127.0.0.1 that refuses connections: bound and kept, but not
/// listening, so no other test can take it while this one lives.
pub struct Refusing(tokio::net::TcpSocket);

impl Refusing {
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("a port on 127.0.0.1");
        Self(socket)
    }

    pub fn addr(&self) -> SocketAddr {
        self.0.local_addr().expect("a bound socket has an address")
    }
}
