//! [`Chain`]: an error and its causes, as one log field.

use std::error::Error;
use std::fmt::{self, Write as _};

/// Shows an error and every `source()` below it, joined by `": "`, as
/// `anyhow`'s `{:#}` does: a `%` field that says what failed under
/// "request failed" in every log format (tracing's text format prints an
/// error value's sources, its JSON format does not). A cause may quote what
/// a peer sent (serde quotes the string it could not read), of any length
/// and with any characters: control characters and those that reorder a
/// line (bidirectional overrides) are escaped as `{:?}` escapes them
/// (`\n`, `\u{1b}`, `\u{202e}`), so that a peer's text cannot start log
/// lines of its own, drive a terminal or disguise a line, and at most
/// [`MOST`] bytes are shown, then `…`.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn Error + 'static));

/// The most bytes a [`Chain`] shows.
const MOST: usize = 1024;

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Capped {
            f,
            left: MOST,
            cut: false,
        };
        write!(out, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(err) = source {
            write!(out, ": {err}")?;
            source = err.source();
        }
        if out.cut {
            out.f.write_str("…")?;
        }
        Ok(())
    }
}

/// `text` as a log field shows it: at most [`MOST`] bytes, then `…`.
#[cfg_attr(not(all(feature = "server", feature = "sqlx")), allow(dead_code))] // database errors
pub(crate) fn capped(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MOST {
        return text.into();
    }
    format!("{}…", head(text, MOST)).into()
}

/// The longest start of `text` of at most `most` bytes that ends on a
/// character's boundary.
fn head(text: &str, most: usize) -> &str {
    let mut end = most.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Writes through to `f`, the characters `is_escaped` picks escaped, until
/// `left` bytes are used, then nothing.
struct Capped<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    left: usize,
    cut: bool,
}

impl fmt::Write for Capped<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(at) = rest.find(is_escaped) {
            let (plain, from_control) = rest.split_at(at);
            self.write_plain(plain)?;
            let mut chars = from_control.chars();
            if let Some(control) = chars.next() {
                // Its escape is of printable characters only.
                write!(self, "{}", control.escape_debug())?;
            }
            rest = chars.as_str();
        }
        self.write_plain(rest)
    }
}

/// Whether a log field shows `c` escaped: a control character, or one
/// that moves or reorders what a terminal shows (a line or paragraph
/// separator, a bidirectional mark, embedding, override or isolate).
fn is_escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

impl Capped<'_, '_> {
    fn write_plain(&mut self, s: &str) -> fmt::Result {
        if s.len() <= self.left {
            self.left -= s.len();
            return self.f.write_str(s);
        }
        let shown = head(s, self.left);
        self.left = 0;
        self.cut = true;
        self.f.write_str(shown)
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::{capped, Chain, MOST};

    #[derive(Debug)]
    struct Outer(io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("request failed")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_is_shown_with_its_causes() {
        let err = Outer(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"));
        assert_eq!(Chain(&err).to_string(), "request failed: refused");
        let alone = io::Error::other("alone");
        assert_eq!(Chain(&alone).to_string(), "alone");
        let deep = Outer(io::Error::other(Outer(io::Error::other("refused"))));
        assert_eq!(
            Chain(&deep).to_string(),
            "request failed: request failed: refused"
        );
    }

    #[test]
    fn a_long_chain_is_cut_at_a_char_boundary() {
        // 16 bytes before it, and one more: the 1,024th byte falls inside
        // an `é`.
        let long = Outer(io::Error::other(format!("x{}", "é".repeat(1000))));
        let shown = Chain(&long).to_string();
        assert!(shown.starts_with("request failed: xéé"), "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        assert!(shown.len() <= MOST + '…'.len_utf8(), "{}", shown.len());
        let text = format!("x{}", "é".repeat(1000));
        let cut = capped(&text);
        assert!(cut.ends_with('…') && cut.len() <= MOST + '…'.len_utf8());
        assert_eq!(capped("short"), "short");
    }

    #[test]
    fn a_peers_control_characters_are_escaped() {
        let err = Outer(io::Error::other(
            "unknown variant `a\n2026-05-01 ERROR forged\u{1b}[2J \u{202e}é 中`",
        ));
        assert_eq!(
            Chain(&err).to_string(),
            "request failed: unknown variant \
             `a\\n2026-05-01 ERROR forged\\u{1b}[2J \\u{202e}é 中`"
        );
    }
}
