//! The `grpc-timeout` header: gRPC's own way to say how long a call may take.
//!
//! The value is 1 to 8 ASCII digits and one unit: `H` hours, `M` minutes,
//! `S` seconds, `m` milliseconds, `u` microseconds, `n` nanoseconds
//! (gRPC over HTTP/2, "Requests"). [`parse`] is strict, because a value
//! read wrongly grants time nobody gave: anything else is no value at all.
//! [`encode`] rounds down, so the next hop is never told it has more time
//! than there is.
//!
//! ```
//! use std::time::Duration;
//! use timebox::grpc::timeout::{encode, parse};
//!
//! assert_eq!(parse("250m"), Some(Duration::from_millis(250)));
//! assert_eq!(parse(" 5S "), Some(Duration::from_secs(5)));
//! assert_eq!(parse("5 S"), None);
//! assert_eq!(parse("123456789m"), None);
//!
//! let value = encode(Duration::from_micros(1_500_700)).unwrap();
//! assert_eq!(value, "1500m");
//! assert_eq!(encode(Duration::ZERO), None);
//! ```

pub use crate::deadline::grpc_timeout::{encode, from_headers, parse, GRPC_TIMEOUT};
