//! [`Settings::load`]: the layers of the gateway's settings, read and
//! validated.

use std::net::SocketAddr;

use timebox::config::{Config, ConfigError, Loader, CONFIG_FILE};

#[cfg(test)]
use super::mcp::BUILTIN;
use super::mcp::{McpSettings, McpSettingsError, Server};

/// The embedded defaults, under `timebox.toml` and the environment.
/// `[mcp]` is the gateway's own section: `TIMEBOX_MCP__<KEY>` variables
/// reach it as they reach timebox's keys.
pub(crate) const DEFAULTS: &str = include_str!("../defaults.toml");

/// The variable that sets the address to listen on.
pub const ADDR_ENV: &str = "CHAT_GATEWAY_ADDR";

/// The address when [`ADDR_ENV`] is not set.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// Everything the gateway is configured with.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) config: Config,
    /// The MCP servers, the built-in one first.
    pub(crate) servers: Vec<Server>,
    /// The server of models whose name does not say.
    pub(crate) default_server: String,
    pub(crate) addr: SocketAddr,
}

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    #[error("invalid configuration: {0}")]
    Config(ConfigError),
    #[error("invalid configuration: {0}")]
    Mcp(McpSettingsError),
    #[error(
        "environment variable `{ADDR_ENV}` is `{value}`: {reason}; \
         expected an address such as {DEFAULT_ADDR}"
    )]
    Addr { value: String, reason: String },
}

impl Settings {
    /// Loads the settings from the embedded defaults, `timebox.toml` and
    /// the process environment, and validates them.
    ///
    /// # Errors
    ///
    /// An invalid configuration value, or an [`ADDR_ENV`] that is not a
    /// socket address; each names the key or variable.
    pub(crate) fn load() -> Result<Self, SettingsError> {
        let (config, mcp) = Loader::new()
            .toml_str(DEFAULTS)
            .toml_file(CONFIG_FILE)
            .env()
            .load_with::<McpSettings>("mcp")
            .map_err(SettingsError::Config)?;
        // The warnings are logged when the router is built.
        config.validate().map_err(SettingsError::Config)?;
        let servers = mcp.servers().map_err(SettingsError::Mcp)?;
        let addr = match std::env::var(ADDR_ENV) {
            Ok(value) => parse_addr(&value)?,
            Err(std::env::VarError::NotPresent) => parse_addr(DEFAULT_ADDR)?,
            Err(std::env::VarError::NotUnicode(value)) => {
                return Err(SettingsError::Addr {
                    value: value.to_string_lossy().into_owned(),
                    reason: "not valid Unicode".to_owned(),
                })
            }
        };
        Ok(Self {
            config,
            servers,
            default_server: mcp.default_server,
            addr,
        })
    }
}

fn parse_addr(value: &str) -> Result<SocketAddr, SettingsError> {
    value
        .trim()
        .parse()
        .map_err(|err: std::net::AddrParseError| SettingsError::Addr {
            value: value.to_owned(),
            reason: err.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_defaults_load_and_validate() {
        let (config, mcp) = Loader::new()
            .toml_str(DEFAULTS)
            .load_with::<McpSettings>("mcp")
            .unwrap();
        assert_eq!(mcp.default_server, BUILTIN);
        assert_eq!(mcp.servers().unwrap().len(), 1);
        assert_eq!(config.stream.stream_inactivity_timeout_secs, 5);
        assert_eq!(config.server.timeouts.request_timeout_ms, Some(5000));
        config.validate().unwrap();
    }

    #[test]
    fn a_bad_address_names_the_variable() {
        let err = parse_addr("localhost").unwrap_err().to_string();
        assert!(err.contains(ADDR_ENV), "{err}");
        assert!(err.contains("`localhost`"), "{err}");
    }
}
