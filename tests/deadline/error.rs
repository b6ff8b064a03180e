//! D6: `DeadlineExceeded` displays "deadline exceeded", becomes an
//! `io::Error` of kind `TimedOut`, and `is_deadline_exceeded` finds it anywhere
//! in a `source()` chain.

use super::*;

#[derive(Debug)]
struct Outer {
    source: Middle,
}

impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request failed")
    }
}

impl Error for Outer {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

#[derive(Debug)]
struct Middle {
    source: DeadlineExceeded,
}

impl fmt::Display for Middle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lookup failed")
    }
}

impl Error for Middle {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

/// A user error wrapping something that is not a deadline.
#[derive(Debug)]
struct Unrelated {
    source: io::Error,
}

impl fmt::Display for Unrelated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("save failed")
    }
}

impl Error for Unrelated {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

#[tokio::test(start_paused = true)]
async fn deadline_exceeded_displays_as_deadline_exceeded() {
    let err = deadline_exceeded().await;
    assert_eq!(err.to_string(), "deadline exceeded");
}

#[tokio::test(start_paused = true)]
async fn deadline_exceeded_becomes_a_timed_out_io_error() {
    let err = io::Error::from(deadline_exceeded().await);
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn is_deadline_exceeded_finds_it_two_links_deep_in_a_user_error() {
    let err = Outer {
        source: Middle {
            source: deadline_exceeded().await,
        },
    };
    assert!(is_deadline_exceeded(&err));
    assert!(is_deadline_exceeded(&err.source));
    assert!(is_deadline_exceeded(&err.source.source));
}

#[tokio::test(start_paused = true)]
async fn is_deadline_exceeded_finds_it_inside_an_io_error() {
    let io_err = io::Error::from(deadline_exceeded().await);
    assert!(is_deadline_exceeded(&io_err));

    let wrapped = Unrelated { source: io_err };
    assert!(is_deadline_exceeded(&wrapped));
}

#[test]
fn is_deadline_exceeded_is_false_for_an_unrelated_error_chain() {
    let disk_full = Unrelated {
        source: io::Error::other("disk full"),
    };
    assert!(!is_deadline_exceeded(&disk_full));

    // A timeout that is not a deadline is not mistaken for one.
    let socket_timeout = Unrelated {
        source: io::Error::new(io::ErrorKind::TimedOut, "read timed out"),
    };
    assert!(!is_deadline_exceeded(&socket_timeout));
    assert!(!is_deadline_exceeded(&io::Error::from(
        io::ErrorKind::TimedOut
    )));
}
