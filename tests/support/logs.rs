//! Capturing what timebox logs, to check that a decision was said.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::subscriber::DefaultGuard;
use tracing_subscriber::fmt::MakeWriter;

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
        let guard = tracing::subscriber::set_default(subscriber);
        (logs, guard)
    }

    /// The one line that contains `needle`, checked to hold every one of
    /// `fields` (`key=value` as the log writes it).
    pub fn one_line_with(&self, needle: &str, fields: &[&str]) -> String {
        let lines = self.lines_with(needle);
        assert_eq!(lines.len(), 1, "one line with {needle:?}: {lines:?}");
        for field in fields {
            assert!(lines[0].contains(field), "{field} in {lines:?}");
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
