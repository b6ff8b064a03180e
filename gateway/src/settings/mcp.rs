//! The `[mcp]` section: which MCP servers the gateway's tools run on.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// The name of the in-process tool server, which is always there.
pub(crate) const BUILTIN: &str = "builtin";

/// The most sessions a server's `max_sessions` may allow: far more than
/// one gateway can keep open (each is a connection or a child process),
/// and a bound the pool's semaphore can hold.
const MAX_SESSIONS: usize = 65_536;

/// The MCP servers, by name, and the one a model uses when its name does
/// not say.
///
/// ```toml
/// [mcp]
/// default_server = "search"
///
/// [mcp.servers.search]          # streamable HTTP
/// url = "http://127.0.0.1:9000/mcp"
/// tools = ["slow_task"]
///
/// [mcp.servers.local]           # stdio: the gateway runs the command
/// command = ["python3", "server.py", "stdio"]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct McpSettings {
    /// The server of models whose name has no `@<server>`.
    pub(crate) default_server: String,
    /// The external servers; `builtin` is always there besides them.
    pub(crate) servers: BTreeMap<String, ServerSettings>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            default_server: BUILTIN.to_owned(),
            servers: BTreeMap::new(),
        }
    }
}

/// One external MCP server: where it is, the tools the gateway expects of
/// it, and its connection pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ServerSettings {
    /// The streamable HTTP endpoint, e.g. `http://127.0.0.1:9000/mcp`.
    pub(crate) url: Option<String>,
    /// The command line of a stdio server: program, then arguments.
    pub(crate) command: Option<Vec<String>>,
    /// Tools the server must list at startup.
    pub(crate) tools: Vec<String>,
    /// Idle sessions kept for the next requests.
    pub(crate) max_idle: usize,
    /// The most sessions open with the server at once, busy or idle (over
    /// stdio, each is a process): a request that finds them all in use
    /// waits for one. A session ended gives its place up once it has
    /// closed, or after 10 s at most: over HTTP once its DELETE is
    /// answered, over stdio once its process has exited (stdin closed,
    /// then SIGTERM after 3 s and SIGKILL 3 s later, so up to 6 s), and a
    /// replacement does not run beside it. A request waiting for a place
    /// may so wait up to that long behind an ended session, within its
    /// own deadline.
    pub(crate) max_sessions: usize,
    /// How long opening a session (the MCP `initialize` handshake) may take.
    pub(crate) connect_timeout_ms: u64,
    /// Whether the stream's inactivity timer is suspended while a tool of
    /// this server works (DESIGN W3). `false` makes a quiet tool end the
    /// stream after `stream.stream_inactivity_timeout_secs`.
    pub(crate) suspend_inactivity: bool,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            url: None,
            command: None,
            tools: Vec::new(),
            max_idle: 4,
            max_sessions: 16,
            connect_timeout_ms: 5000,
            suspend_inactivity: true,
        }
    }
}

/// How the gateway reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The in-process server, over a pipe.
    Builtin,
    /// Streamable HTTP at this URL.
    Http(String),
    /// A child process speaking over its stdin and stdout.
    Stdio { program: String, args: Vec<String> },
}

/// Where a server lives, as the log says it: a URL's scheme, host, port
/// and path, and a command's program. A URL's user info and query, and a
/// command's arguments, may hold credentials; the configuration has them.
impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Builtin => f.write_str("in process"),
            Self::Http(url) => write!(f, "at {}", shown(url)),
            Self::Stdio { program, args } => match args.len() {
                0 => write!(f, "run as `{program}`"),
                1 => write!(f, "run as `{program}` with 1 argument"),
                n => write!(f, "run as `{program}` with {n} arguments"),
            },
        }
    }
}

/// `url` without its user info, query and fragment, parsed as the client
/// parses it. One that does not parse as a URL with a host is shown up to
/// its query, unless it has an `@`: then not at all, since where its user
/// info ends cannot be told.
fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if !parsed.cannot_be_a_base() => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            // Both fail only on a URL that cannot have user info.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.into()
        }
        _ if url.contains('@') => "<a URL that does not parse, not shown>".to_owned(),
        _ => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

/// A server, ready to connect to.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) transport: Transport,
    pub(crate) tools: Vec<String>,
    pub(crate) max_idle: usize,
    pub(crate) max_sessions: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) suspend_inactivity: bool,
}

#[cfg(test)]
impl Server {
    /// The built-in server as the pool tests want it, named `here`, with
    /// room for `max_sessions` sessions.
    pub(crate) fn builtin_for_tests(max_sessions: usize) -> Self {
        Self {
            name: "here".to_owned(),
            transport: Transport::Builtin,
            tools: Vec::new(),
            max_idle: 4,
            max_sessions,
            connect_timeout: Duration::from_secs(5),
            suspend_inactivity: true,
        }
    }
}

/// A setting of `[mcp]` that cannot be used, naming its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {message}")]
pub(crate) struct McpSettingsError {
    pub(crate) key: String,
    pub(crate) message: String,
}

impl McpSettings {
    /// Every server, the built-in one first, or the first setting that
    /// cannot be used.
    ///
    /// # Errors
    ///
    /// A server named `builtin`, a name that is not `[a-z0-9_-]+`, a server
    /// with both or neither of `url` and `command`, a `url` that is not
    /// `http://` or `https://`, an empty `command`, a `connect_timeout_ms`
    /// or `max_sessions` of 0, or a `default_server` that is not a server.
    pub(crate) fn servers(&self) -> Result<Vec<Server>, McpSettingsError> {
        let defaults = ServerSettings::default();
        let mut servers = vec![Server {
            name: BUILTIN.to_owned(),
            transport: Transport::Builtin,
            tools: vec![crate::tools::SLOW_TASK.to_owned()],
            max_idle: defaults.max_idle,
            max_sessions: defaults.max_sessions,
            connect_timeout: Duration::from_millis(defaults.connect_timeout_ms),
            suspend_inactivity: defaults.suspend_inactivity,
        }];
        for (name, settings) in &self.servers {
            servers.push(settings.server(name)?);
        }
        if !servers
            .iter()
            .any(|server| server.name == self.default_server)
        {
            let known: Vec<_> = servers.iter().map(|server| server.name.as_str()).collect();
            return Err(McpSettingsError {
                key: "mcp.default_server".to_owned(),
                message: format!(
                    "`{}` is not a server; the servers are {}",
                    self.default_server,
                    known.join(", ")
                ),
            });
        }
        Ok(servers)
    }
}

impl ServerSettings {
    fn server(&self, name: &str) -> Result<Server, McpSettingsError> {
        // The table's key as TOML writes it: quoted unless it is a bare key.
        let bare = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let table = if bare {
            format!("mcp.servers.{name}")
        } else {
            format!("mcp.servers.{name:?}")
        };
        let error = |key: &str, message: String| McpSettingsError {
            key: format!("{table}{key}"),
            message,
        };
        if name == BUILTIN {
            return Err(error(
                "",
                format!("`{BUILTIN}` is the in-process server; give yours another name"),
            ));
        }
        // A bare key with no capitals.
        let name_ok = bare && !name.bytes().any(|b| b.is_ascii_uppercase());
        if !name_ok {
            return Err(error(
                "",
                "a server name is one or more lowercase letters, digits, `-` and `_`, \
                 so that a model name can carry it after `@`"
                    .to_owned(),
            ));
        }
        let transport = match (&self.url, &self.command) {
            (Some(url), None) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(error(
                        ".url",
                        format!("`{}` is not an http:// or https:// URL", shown(url)),
                    ));
                }
                Transport::Http(url.clone())
            }
            (None, Some(command)) => {
                let Some((program, args)) = command.split_first() else {
                    return Err(error(
                        ".command",
                        "is empty; give the program first".to_owned(),
                    ));
                };
                Transport::Stdio {
                    program: program.clone(),
                    args: args.to_vec(),
                }
            }
            (Some(_), Some(_)) => {
                return Err(error(
                    "",
                    "has both `url` and `command`; a server is one or the other".to_owned(),
                ))
            }
            (None, None) => {
                return Err(error(
                    "",
                    "needs `url` (streamable HTTP) or `command` (stdio)".to_owned(),
                ))
            }
        };
        if self.connect_timeout_ms == 0 {
            return Err(error(
                ".connect_timeout_ms",
                "must be at least 1".to_owned(),
            ));
        }
        if self.max_sessions == 0 {
            return Err(error(
                ".max_sessions",
                "must be at least 1: with none, no tool call could run".to_owned(),
            ));
        }
        if self.max_sessions > MAX_SESSIONS {
            return Err(error(
                ".max_sessions",
                format!(
                    "is {}; at most {MAX_SESSIONS} sessions can be open to one server",
                    self.max_sessions
                ),
            ));
        }
        Ok(Server {
            name: name.to_owned(),
            transport,
            tools: self.tools.clone(),
            max_idle: self.max_idle,
            max_sessions: self.max_sessions,
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            suspend_inactivity: self.suspend_inactivity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(toml: &str) -> McpSettings {
        let (_, mcp) = timebox::config::Loader::new()
            .toml_str(toml)
            .load_with::<McpSettings>("mcp")
            .unwrap();
        mcp
    }

    #[test]
    fn the_builtin_server_is_always_there_and_the_default() {
        let servers = McpSettings::default().servers().unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].transport, Transport::Builtin);
        assert_eq!(McpSettings::default().default_server, BUILTIN);
    }

    #[test]
    fn http_and_stdio_servers_are_read() {
        let mcp = settings(
            "[mcp]\ndefault_server = \"web\"\n\
             [mcp.servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\ntools = [\"slow_task\"]\n\
             [mcp.servers.local]\ncommand = [\"python3\", \"server.py\", \"stdio\"]\nmax_idle = 1",
        );
        let servers = mcp.servers().unwrap();
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [BUILTIN, "local", "web"]);
        assert_eq!(
            servers[1].transport,
            Transport::Stdio {
                program: "python3".to_owned(),
                args: vec!["server.py".to_owned(), "stdio".to_owned()],
            }
        );
        assert_eq!(servers[1].max_idle, 1);
        assert_eq!(
            servers[2].transport,
            Transport::Http("http://127.0.0.1:9/mcp".to_owned())
        );
    }

    #[test]
    fn where_a_server_lives_is_said_without_credentials() {
        let http = Transport::Http("https://user:pw@mcp.example:8443/mcp?key=abc".to_owned());
        assert_eq!(http.to_string(), "at https://mcp.example:8443/mcp");
        let plain = Transport::Http("http://127.0.0.1/mcp".to_owned());
        assert_eq!(plain.to_string(), "at http://127.0.0.1/mcp");
        let international = Transport::Http("https://k:v@bücher.example/mcp#x".to_owned());
        assert_eq!(
            international.to_string(),
            "at https://xn--bcher-kva.example/mcp"
        );
        let bare = Transport::Http("http://u:p@host:9?x=1".to_owned());
        assert_eq!(bare.to_string(), "at http://host:9/");
        // A `#` in the password: no host to tell, so nothing of it.
        let hash = Transport::Http("https://user:p#ss@host/mcp".to_owned());
        assert!(!hash.to_string().contains("user"), "{hash}");
        let stdio = Transport::Stdio {
            program: "tool-server".to_owned(),
            args: vec!["--token".to_owned(), "s3cret".to_owned()],
        };
        assert_eq!(stdio.to_string(), "run as `tool-server` with 2 arguments");
        let one = Transport::Stdio {
            program: "tool-server".to_owned(),
            args: vec!["--token=s3cret".to_owned()],
        };
        assert_eq!(one.to_string(), "run as `tool-server` with 1 argument");
    }

    #[test]
    fn unusable_servers_name_their_key() {
        for (toml, key, says) in [
            ("[mcp.servers.a]", "mcp.servers.a", "needs `url`"),
            (
                "[mcp.servers.a]\nurl = \"http://x\"\ncommand = [\"x\"]",
                "mcp.servers.a",
                "both",
            ),
            (
                "[mcp.servers.a]\nurl = \"ftp://x\"",
                "mcp.servers.a.url",
                "`ftp://x/`",
            ),
            // Said without its credentials and query.
            (
                "[mcp.servers.a]\nurl = \"ftp://u:pw@x/p?k=s\"",
                "mcp.servers.a.url",
                "`ftp://x/p` is not",
            ),
            (
                "[mcp.servers.a]\ncommand = []",
                "mcp.servers.a.command",
                "empty",
            ),
            (
                "[mcp.servers.builtin]\nurl = \"http://x\"",
                "mcp.servers.builtin",
                "in-process",
            ),
            (
                "[mcp.servers.A]\nurl = \"http://x\"",
                "mcp.servers.A",
                "lowercase",
            ),
            (
                "[mcp.servers.\"\"]\nurl = \"http://x\"",
                "mcp.servers.\"\"",
                "one or more",
            ),
            (
                "[mcp.servers.\"a.b\"]\nurl = \"http://x\"",
                "mcp.servers.\"a.b\"",
                "lowercase",
            ),
            (
                "[mcp.servers.a]\nurl = \"http://x\"\nconnect_timeout_ms = 0",
                "mcp.servers.a.connect_timeout_ms",
                "at least 1",
            ),
            (
                "[mcp.servers.a]\nurl = \"http://x\"\nmax_sessions = 0",
                "mcp.servers.a.max_sessions",
                "at least 1",
            ),
            (
                "[mcp.servers.a]\nurl = \"http://x\"\nmax_sessions = 3000000000",
                "mcp.servers.a.max_sessions",
                "at most 65536",
            ),
            (
                "[mcp]\ndefault_server = \"nope\"",
                "mcp.default_server",
                "`nope` is not a server",
            ),
        ] {
            let err = settings(toml).servers().unwrap_err();
            assert_eq!(err.key, key, "{toml}");
            assert!(err.to_string().contains(says), "{toml}: {err}");
        }
    }
}
