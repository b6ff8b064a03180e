//! [`Tools`]: every MCP server's pool, opened and checked at start, closed
//! at shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use timebox::config::Config;

use super::{Pool, TimeboxHttp, ToolError};
use crate::settings::{Server, Transport};

/// Every MCP server's pool, by name. Clones share them.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pools: Arc<BTreeMap<String, Arc<Pool>>>,
}

impl Tools {
    /// Opens a session with every server, checks that it lists the tools
    /// the settings expect of it, and keeps the session in its pool.
    /// Sessions over HTTP send through one client configured by `config`,
    /// so its retry budgets and breakers hold for the servers; it is built
    /// only when a server is reached over HTTP.
    ///
    /// # Errors
    ///
    /// The first server that cannot be reached or lacks a tool; the error
    /// names it.
    pub(crate) async fn start(servers: Vec<Server>, config: &Config) -> Result<Self, ToolError> {
        let http = TimeboxHttp::new(config);
        if servers
            .iter()
            .any(|server| matches!(server.transport, Transport::Http(_)))
        {
            http.build();
        }
        let mut pools = BTreeMap::new();
        for server in servers {
            // Through the pool, so the first session holds one of the
            // server's `max_sessions` places as every later one does.
            let pool = Pool::new(server, http.clone());
            let server = pool.server();
            let session = pool.take().await?;
            let listing = tokio::time::timeout(server.connect_timeout, session.tool_names());
            let listed = match listing.await {
                Ok(listed) => listed.map_err(|err| {
                    ToolError::server(&server.name, format_args!("did not list its tools: {err}"))
                })?,
                Err(_) => {
                    return Err(ToolError::server(
                        &server.name,
                        format_args!(
                            "did not list its tools within {:?} (`connect_timeout_ms`)",
                            server.connect_timeout
                        ),
                    ))
                }
            };
            let missing: Vec<&str> = server
                .tools
                .iter()
                .filter(|tool| !listed.contains(tool))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(ToolError::server(
                    &server.name,
                    format_args!(
                        "does not have the tools {missing:?} its settings list; it has {listed:?}"
                    ),
                ));
            }
            tracing::info!(
                server = server.name,
                transport = %server.transport,
                tools = ?listed,
                "MCP server ready"
            );
            pool.give_back(session);
            pools.insert(pool.name().to_owned(), Arc::new(pool));
        }
        Ok(Self {
            pools: Arc::new(pools),
        })
    }

    /// The pool of the server `name`.
    pub(crate) fn pool(&self, name: &str) -> Option<&Arc<Pool>> {
        self.pools.get(name)
    }

    /// The names of the servers.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.pools.keys().map(String::as_str)
    }

    /// Closes every pool, each session waited for at most `bound`: servers
    /// still read what was sent before the close, so the cancellation
    /// notices of a shutdown reach them.
    pub(crate) async fn close(&self, bound: Duration) {
        let closing = self.pools.values().map(|pool| pool.close(bound));
        futures_util::future::join_all(closing).await;
    }
}
