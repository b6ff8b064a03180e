//! `ConfigError`: every problem found while loading or validating a config.

use std::error::Error;
use std::fmt;

/// The configuration could not be loaded, or it is not valid.
///
/// An error holds one or more problems (validation reports all of them at
/// once). Each message names the key by its full dotted path
/// (`http.client.retry_budget.transient_cost`) and, for loading errors, where
/// the value came from: the file or the environment variable.
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
///
/// let err = Config::from_toml_str("[server]\nshutdown_timeout = 5").unwrap_err();
/// assert_eq!(err.keys().collect::<Vec<_>>(), ["server.shutdown_timeout"]);
/// assert!(err.to_string().starts_with("unknown key `server.shutdown_timeout`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    problems: Vec<Problem>,
}

/// One problem: the key it is about (if any) and the whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    key: Option<String>,
    message: String,
}

impl ConfigError {
    /// An error of one problem.
    pub(super) fn new(key: Option<String>, message: String) -> Self {
        Self {
            problems: vec![Problem { key, message }],
        }
    }

    /// An error of no problems yet, to collect into with [`Self::push`].
    pub(super) const fn empty() -> Self {
        Self {
            problems: Vec::new(),
        }
    }

    /// Adds a problem about `key`.
    pub(super) fn push(&mut self, key: &str, message: String) {
        self.problems.push(Problem {
            key: Some(key.to_owned()),
            message,
        });
    }

    /// Adds every problem of `other`.
    pub(super) fn extend(&mut self, other: Self) {
        self.problems.extend(other.problems);
    }

    /// Whether no problem was collected.
    pub(super) fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// The dotted keys the problems are about (`server.shutdown_timeout_secs`),
    /// in the order found; problems that concern no single key (a TOML syntax
    /// error, a bad `TIMEBOX_PROFILE`) add none.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.problems.iter().filter_map(|p| p.key.as_deref())
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [] => f.write_str("invalid configuration"),
            [one] => f.write_str(&one.message),
            many => {
                write!(f, "{} configuration problems: ", many.len())?;
                for (i, problem) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    f.write_str(&problem.message)?;
                }
                Ok(())
            }
        }
    }
}

impl Error for ConfigError {}

/// `path` as a dotted key, as TOML writes it: a level that is not a bare
/// key (a gRPC method's `/package.Service/Method`) is quoted.
pub(crate) fn dotted_key<S: AsRef<str>>(path: &[S]) -> String {
    let mut key = String::new();
    for level in path {
        let level = level.as_ref();
        if !key.is_empty() {
            key.push('.');
        }
        let bare = !level.is_empty()
            && level
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if bare {
            key.push_str(level);
        } else {
            key.push_str(&format!("{level:?}"));
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::ConfigError;

    #[test]
    fn several_problems_display_as_one_line_with_a_count() {
        let mut err = ConfigError::empty();
        err.push("a.b", "`a.b` is wrong".to_owned());
        err.push("c", "`c` is wrong".to_owned());
        assert_eq!(
            err.to_string(),
            "2 configuration problems: `a.b` is wrong; `c` is wrong"
        );
        assert_eq!(err.keys().collect::<Vec<_>>(), ["a.b", "c"]);
    }
}
