//! The scripted models: what each `model` name makes the provider do.

use std::fmt;
use std::time::Duration;

/// What a scripted model does, chosen by the request's `model`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Script {
    /// `scripted-fast`: a short answer, a token every 40 ms.
    Fast,
    /// `scripted-thinker[-<N>s]`: silent for N s (default 8) before its first
    /// token, then a short answer. Only the first-chunk timer covers that
    /// silence: inactivity is not armed before the first token.
    Thinker { think: Duration },
    /// `scripted-tool-<N>s`: says it will use a tool, runs `slow_task` for
    /// N s (inactivity suspended meanwhile), then answers with its result.
    /// `scripted-tool-quiet-<N>s`: the same with a tool that reports no
    /// progress, so nothing at all is sent while it works.
    /// `scripted-tool-pair-<N>s`: two `slow_task` calls of N s at once.
    ///
    /// Each of them may end in `@<server>`: the MCP server the tool runs
    /// on (`[mcp.servers.<server>]`, or `builtin`); without it, the tool
    /// runs on `mcp.default_server`.
    Tool(ToolScript),
    /// `scripted-slow-<N>s`: an answer whose tokens are spread over N s.
    Slow { over: Duration },
    /// `scripted-hang`: a few words, then nothing, ever.
    Hang,
}

/// What a `scripted-tool-*` model asks of its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolScript {
    /// How long each call works.
    pub(crate) work: Duration,
    /// Whether the tool reports progress.
    pub(crate) progress: bool,
    /// How many calls run at once: 1, or 2 for `-pair-`.
    pub(crate) calls: usize,
    /// The server named after `@`, if any.
    pub(crate) server: Option<String>,
}

/// The model names `GET /v1/models` lists: one of each kind.
pub(crate) const MODELS: &[&str] = &[
    "scripted-fast",
    "scripted-thinker",
    "scripted-tool-60s",
    "scripted-slow-30s",
    "scripted-hang",
];

/// The longest N a model name may ask for: the tool's own limit.
const MAX_SECS: u64 = crate::tools::MAX_SECONDS;

/// How long `scripted-thinker` thinks when the name does not say.
const DEFAULT_THINK: Duration = Duration::from_secs(8);

/// The words of every scripted answer.
pub(crate) const ANSWER: &str =
    "A deadline is a promise about time: keep it, pass it on, and stop when it is spent.";

/// A model name that is not a scripted model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownModel(String);

impl fmt::Display for UnknownModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "model `{}` does not exist; use one of scripted-fast, scripted-thinker[-<N>s], \
             scripted-tool[-quiet|-pair]-<N>s[@<server>], scripted-slow-<N>s, scripted-hang \
             (N in 1..={MAX_SECS})",
            self.0
        )
    }
}

impl Script {
    /// The script a model name asks for.
    ///
    /// # Errors
    ///
    /// A name that is not one of the scripted models, or an N out of range.
    pub(crate) fn from_model(model: &str) -> Result<Self, UnknownModel> {
        let unknown = || UnknownModel(model.to_owned());
        let rest = model.strip_prefix("scripted-").ok_or_else(unknown)?;
        let (rest, server) = match rest.split_once('@') {
            Some((rest, server)) if !server.is_empty() => (rest, Some(server.to_owned())),
            Some(_) => return Err(unknown()),
            None => (rest, None),
        };
        let script = match rest {
            "fast" => Self::Fast,
            "hang" => Self::Hang,
            "thinker" => Self::Thinker {
                think: DEFAULT_THINK,
            },
            _ => {
                let (kind, secs) = rest.rsplit_once('-').ok_or_else(unknown)?;
                let secs = seconds(secs).ok_or_else(unknown)?;
                let tool = |progress, calls| {
                    Self::Tool(ToolScript {
                        work: secs,
                        progress,
                        calls,
                        server: server.clone(),
                    })
                };
                match kind {
                    "thinker" => Self::Thinker { think: secs },
                    "tool" => tool(true, 1),
                    "tool-quiet" => tool(false, 1),
                    "tool-pair" => tool(true, 2),
                    "slow" => Self::Slow { over: secs },
                    _ => return Err(unknown()),
                }
            }
        };
        // Only a tool runs on a server.
        if server.is_some() && !matches!(script, Self::Tool(_)) {
            return Err(unknown());
        }
        Ok(script)
    }
}

/// `"<N>s"` with N in `1..=MAX_SECS`, written plainly: digits only, no
/// sign and no leading zero (which `u64`'s parser takes), so a model name
/// that is accepted, and logged, stays short.
fn seconds(text: &str) -> Option<Duration> {
    let digits = text.strip_suffix('s')?;
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (1..=MAX_SECS).contains(&n).then(|| Duration::from_secs(n))
}

/// `text` cut into word tokens, each with the space that follows it.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_model_is_a_script() {
        for model in MODELS {
            assert!(Script::from_model(model).is_ok(), "{model}");
        }
    }

    #[test]
    fn names_carry_their_seconds() {
        let tool = |secs, progress, calls, server: Option<&str>| {
            Ok(Script::Tool(ToolScript {
                work: Duration::from_secs(secs),
                progress,
                calls,
                server: server.map(str::to_owned),
            }))
        };
        assert_eq!(
            Script::from_model("scripted-tool-60s"),
            tool(60, true, 1, None)
        );
        assert_eq!(
            Script::from_model("scripted-tool-quiet-2s"),
            tool(2, false, 1, None)
        );
        assert_eq!(
            Script::from_model("scripted-tool-pair-5s@py"),
            tool(5, true, 2, Some("py"))
        );
        assert_eq!(
            Script::from_model("scripted-tool-quiet-3s@local-1"),
            tool(3, false, 1, Some("local-1"))
        );
        assert_eq!(
            Script::from_model("scripted-thinker-3s"),
            Ok(Script::Thinker {
                think: Duration::from_secs(3)
            })
        );
        assert_eq!(
            Script::from_model("scripted-thinker"),
            Ok(Script::Thinker {
                think: DEFAULT_THINK
            })
        );
    }

    #[test]
    fn bad_names_are_unknown_and_the_error_lists_the_models() {
        for model in [
            "gpt-4o",
            "scripted-",
            "scripted-tool",
            "scripted-tool-0s",
            "scripted-tool-3601s",
            "scripted-tool-loud-3s",
            "scripted-tool-60",
            "scripted-tool--1s",
            "scripted-tool-+5s",
            "scripted-tool-0005s",
            "scripted-fast-1s",
            "scripted-slow-1.5s",
            "scripted-tool-3s@",
            "scripted-fast@py",
            "scripted-slow-3s@py",
        ] {
            let err = Script::from_model(model).unwrap_err().to_string();
            assert!(err.contains(&format!("`{model}`")), "{err}");
            assert!(err.contains("scripted-fast"), "{err}");
        }
    }

    #[test]
    fn tokens_join_back_into_the_text() {
        assert_eq!(tokens(ANSWER).concat(), ANSWER);
        assert_eq!(tokens("a b"), ["a ", "b"]);
    }
}
