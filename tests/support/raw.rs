//! HTTP/1.1 spoken by hand on a raw socket, for tests that send what no
//! well-behaved client would (half a head) or look at the connection itself.

use std::io;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// One response read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    /// The value of the header `name` (case-insensitive). Fails the test
    /// when the header came more than once, so that no test reads one of
    /// several as the answer's.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self
            .headers
            .iter()
            .filter(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str());
        let first = values.next();
        let more: Vec<&str> = values.collect();
        assert!(
            more.is_empty(),
            "{name} came more than once: {first:?}, {more:?}"
        );
        first
    }
}

/// Reads one response with a `content-length` body from `stream`, byte by
/// byte past its head so that nothing of a next response is consumed.
pub async fn read_response(stream: &mut TcpStream) -> io::Result<RawResponse> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("closed after {:?}", String::from_utf8_lossy(&head)),
            ));
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, head.clone()))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await?;
    Ok(RawResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
