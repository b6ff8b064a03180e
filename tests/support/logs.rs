//! Capturing what timebox logs, to check that a decision was said.

use std::io;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tracing::subscriber::{DefaultGuard, NoSubscriber};
use tracing::Dispatch;
use tracing_subscriber::fmt::MakeWriter;

/// Makes `subscriber` the current thread's default until the guard drops,
/// seeing every event of this thread even while other tests' threads run
/// the same code.
///
/// tracing caches, per callsite, whether any subscriber wants it. While a
/// single dispatcher is registered, a callsite that another thread reaches
/// first is asked of that thread's default alone: with no subscriber there,
/// the callsite is cached as wanted by nobody, and this thread's subscriber
/// never sees it. A second dispatcher that lives for the whole test binary
/// makes tracing ask every registered one.
pub fn scoped(subscriber: impl Into<Dispatch>) -> DefaultGuard {
    static SECOND_DISPATCHER: OnceLock<Dispatch> = OnceLock::new();
    SECOND_DISPATCHER.get_or_init(|| Dispatch::new(NoSubscriber::default()));
    tracing::dispatcher::set_default(&subscriber.into())
}

/// Every line logged on this thread while the guard lives, at debug and up,
/// without colours.
#[derive(Debug, Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Starts capturing on the current thread (a current-thread runtime's
    /// tasks included) until the guard drops.
    pub fn capture() -> (Self, DefaultGuard) {
        let logs = Self::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        (logs, scoped(subscriber))
    }

    /// The one line that contains `needle`, checked to hold every one of
    /// `fields` (`key=value` as the log writes it).
    pub fn one_line_with(&self, needle: &str, fields: &[&str]) -> String {
        let lines = self.lines_with(needle);
        assert_eq!(lines.len(), 1, "one line with {needle:?}: {lines:?}");
        for field in fields {
            assert!(has_field(&lines[0], field), "{field} in {lines:?}");
        }
        lines[0].clone()
    }

    /// The lines that contain `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| line.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

/// Whether `line` holds `field` as the log writes it: `key=value` whole, so
/// that `elapsed_ms=50` is not found in `elapsed_ms=500`; `key=` for the key
/// with any value; anything else (a level, words of the message) as it is.
pub fn has_field(line: &str, field: &str) -> bool {
    if !field.contains('=') {
        return line.contains(field);
    }
    line.match_indices(field).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + field.len()..].chars().next();
        before.is_none_or(char::is_whitespace)
            && (field.ends_with('=') || after.is_none_or(char::is_whitespace))
    })
}

impl<'a> MakeWriter<'a> for Logs {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
