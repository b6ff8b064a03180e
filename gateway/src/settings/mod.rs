//! Loading the gateway's settings: timebox's [`Config`](timebox::config::Config) and the gateway's
//! own `[mcp]` section over the embedded defaults, and the address to
//! listen on.

mod load;
mod mcp;

pub(crate) use load::{Settings, SettingsError};
pub use load::{ADDR_ENV, DEFAULT_ADDR};
pub(crate) use mcp::{Server, Transport};
