//! `Profile`: named presets that change the built-in defaults.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError};

/// A named preset of defaults, chosen with `TIMEBOX_PROFILE` or
/// [`Loader::profile`](super::Loader::profile).
///
/// With no profile the built-in defaults apply unchanged. A profile changes
/// only the defaults: a value written in `timebox.toml` or the environment
/// still wins.
///
/// | key | no profile | `prod` | `dev` |
/// |---|---|---|---|
/// | `server.timeouts.request_timeout_ms` | unset | 30000 | unset |
/// | `server.shutdown_timeout_secs` | 30 | 35 | 1 |
/// | `server.prestop_grace_secs` | 5 | 5 | 0 |
/// | `server.drain_force_secs` | 10 | 10 | 10 |
///
/// # Examples
///
/// ```
/// use timebox::config::Profile;
///
/// let profile: Profile = "prod".parse().unwrap();
/// assert_eq!(profile, Profile::Prod);
/// assert_eq!(profile.to_string(), "prod");
/// assert!("staging".parse::<Profile>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Local development: stop at once (`shutdown_timeout_secs` 1,
    /// `prestop_grace_secs` 0), no request deadline.
    Dev,
    /// Production: a 30 s request deadline and a shutdown that outlasts it
    /// (`shutdown_timeout_secs` 35).
    Prod,
}

impl Profile {
    /// The profile's name as `TIMEBOX_PROFILE` spells it: `"dev"` or `"prod"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Dev => "dev",
            Self::Prod => "prod",
        }
    }

    /// The profile named `name` (`"dev"` or `"prod"`, exactly), if any.
    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name {
            "dev" => Some(Self::Dev),
            "prod" => Some(Self::Prod),
            _ => None,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = ConfigError;

    /// Parses `"dev"` or `"prod"`; anything else is an error naming the value.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| {
            ConfigError::new(
                None,
                format!("unknown profile `{s}`; expected `dev` or `prod`"),
            )
        })
    }
}

impl Config {
    /// The built-in defaults with `profile`'s values applied (see [`Profile`]).
    ///
    /// This is what a loader starts from before it reads `timebox.toml` and
    /// the environment.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::config::{Config, Profile};
    ///
    /// let prod = Config::preset(Profile::Prod);
    /// assert_eq!(prod.server.timeouts.request_timeout_ms, Some(30_000));
    /// assert_eq!(prod.server.shutdown_timeout_secs, 35);
    /// ```
    #[must_use]
    pub fn preset(profile: Profile) -> Self {
        let mut config = Self::default();
        let server = &mut config.server;
        match profile {
            Profile::Dev => {
                server.shutdown_timeout_secs = 1;
                server.prestop_grace_secs = 0;
                server.drain_force_secs = 10;
            }
            Profile::Prod => {
                server.timeouts.request_timeout_ms = Some(30_000);
                server.shutdown_timeout_secs = 35;
                server.prestop_grace_secs = 5;
                server.drain_force_secs = 10;
            }
        }
        config
    }
}
