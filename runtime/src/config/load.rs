//! `Loader`: defaults → profile → TOML → environment, merged with figment.

use std::path::{Path, PathBuf};

use figment::Figment;
use serde::de::DeserializeOwned;

use super::layers::{self, Layer, ENV_PREFIX};
use super::{Config, ConfigError, Profile};

/// The file [`Config::load`] reads from the current directory, if present.
pub const CONFIG_FILE: &str = "timebox.toml";

/// The environment variable that selects a [`Profile`]: `dev` or `prod`.
pub const PROFILE_ENV: &str = "TIMEBOX_PROFILE";

/// The environment variable that names one more TOML file, read after the
/// TOML sources given in code (so after `timebox.toml` for
/// [`Config::load`]), such as `/etc/my-service/timebox.toml` where a
/// Kubernetes `ConfigMap` is mounted. The file must exist.
pub const CONFIG_FILE_ENV: &str = "TIMEBOX_CONFIG";

/// Builds a [`Config`] from explicit sources: a profile, TOML files or
/// strings and environment variables.
///
/// Sources are applied in a fixed order whatever the order of the calls:
/// built-in defaults → the profile's values → TOML (files and strings in the
/// order added, later wins, then the file [`CONFIG_FILE_ENV`] names among
/// the environment variables) → environment variables. [`Config::load`] is
/// `Loader::new().toml_file("timebox.toml").env().load()`.
///
/// Tests pass the environment as pairs with [`Loader::env_vars`] instead of
/// changing the process environment, which every test thread shares.
///
/// # Examples
///
/// ```
/// use timebox::config::{Loader, Profile};
///
/// let config = Loader::new()
///     .profile(Profile::Prod)
///     .toml_str("[server]\nshutdown_timeout_secs = 40")
///     .env_vars([("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "2")])
///     .load()
///     .unwrap();
/// assert_eq!(config.server.timeouts.request_timeout_ms, Some(30_000)); // profile
/// assert_eq!(config.server.shutdown_timeout_secs, 40); // TOML beats the profile
/// assert_eq!(config.server.prestop_grace_secs, 2); // environment beats both
/// ```
#[derive(Debug, Clone, Default)]
pub struct Loader {
    profile: Option<Profile>,
    toml: Vec<TomlSource>,
    env: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum TomlSource {
    Text(String),
    File(PathBuf),
}

impl Loader {
    /// A loader with no sources: [`load`](Self::load) gives the defaults.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            profile: None,
            toml: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Starts from `profile`'s values instead of the plain defaults.
    ///
    /// A `TIMEBOX_PROFILE` among the environment variables wins over this: the
    /// environment has the last word on everything.
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Adds a TOML document.
    #[must_use]
    pub fn toml_str(mut self, toml: impl Into<String>) -> Self {
        self.toml.push(TomlSource::Text(toml.into()));
        self
    }

    /// Adds the TOML file at `path`, read when [`load`](Self::load) runs.
    ///
    /// The file is optional: a missing file adds nothing (as
    /// `timebox.toml` for [`Config::load`]). Any other read error is an error.
    #[must_use]
    pub fn toml_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.toml.push(TomlSource::File(path.into()));
        self
    }

    /// Adds the process environment, read now.
    ///
    /// Only variables named [`ENV_PREFIX`]`…` are kept; a value that is not
    /// valid Unicode is converted lossily.
    #[must_use]
    pub fn env(self) -> Self {
        self.env_vars(std::env::vars_os().filter_map(|(key, value)| {
            let key = key.into_string().ok()?;
            key.starts_with(ENV_PREFIX)
                .then(|| (key, value.to_string_lossy().into_owned()))
        }))
    }

    /// Adds environment variables given as `(name, value)` pairs.
    ///
    /// They are read as the process environment would be: `TIMEBOX_PROFILE`
    /// selects the profile, `TIMEBOX_CONFIG` names one more TOML file (see
    /// [`CONFIG_FILE_ENV`]; empty, it names none), `TIMEBOX_<SECTION>__<KEY>`
    /// sets a key (each `__` goes one level down, names are
    /// case-insensitive), other names are
    /// ignored, but for one that begins with a section and one underscore
    /// (`TIMEBOX_SERVER_SHUTDOWN_TIMEOUT_SECS`), which is an error naming
    /// it when the config loads (a Kubernetes service link's name, such as
    /// `TIMEBOX_SERVER_SERVICE_HOST`, is ignored too). A later pair for the
    /// same name wins.
    #[must_use]
    pub fn env_vars<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Merges the sources into a [`Config`].
    ///
    /// This does not validate the values; call [`Config::validate`] before
    /// starting.
    ///
    /// # Errors
    ///
    /// A `TIMEBOX_PROFILE` other than `dev` or `prod`; a file that exists but
    /// cannot be read, or one `TIMEBOX_CONFIG` names that cannot be read
    /// (a missing one too); invalid TOML; an unknown key or a value of the wrong
    /// type, in a file or in the environment. The error names the key and
    /// where the value came from.
    pub fn load(&self) -> Result<Config, ConfigError> {
        let figment = self.layers()?.fold(Figment::new(), Figment::merge);
        figment
            .extract::<Config>()
            .map_err(|err| layers::to_config_error(err, &figment))
    }

    /// Merges the sources into a [`Config`] and the application's own
    /// settings, which live in the same files and variables under the
    /// top-level table `section`.
    ///
    /// `section` is taken out of every source before the [`Config`] is read,
    /// so it does not count as an unknown key; the rest is read as
    /// [`load`](Self::load) reads it. `T` is read from `section` alone, as
    /// an empty table when no source has it: give its fields serde defaults.
    /// `TIMEBOX_<SECTION>__<KEY>` variables reach it as they reach the rest:
    /// their names are read in lowercase, so they reach `section` however
    /// it is spelt, and a field of `T` whose name has capitals only from a
    /// file.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::config::Loader;
    ///
    /// #[derive(Debug, Default, serde::Deserialize)]
    /// #[serde(default, deny_unknown_fields)]
    /// struct Search {
    ///     index: String,
    ///     shards: u32,
    /// }
    ///
    /// let loader = Loader::new()
    ///     .toml_str("[server]\nshutdown_timeout_secs = 40\n[search]\nindex = \"docs\"")
    ///     .env_vars([("TIMEBOX_SEARCH__SHARDS", "3")]);
    /// let (config, search) = loader.load_with::<Search>("search")?;
    /// assert_eq!(config.server.shutdown_timeout_secs, 40);
    /// assert_eq!((search.index.as_str(), search.shards), ("docs", 3));
    ///
    /// // Errors in the section name its keys as written.
    /// let err = Loader::new()
    ///     .toml_str("[search]\nshards = \"many\"")
    ///     .load_with::<Search>("search")
    ///     .unwrap_err();
    /// assert_eq!(err.keys().collect::<Vec<_>>(), ["search.shards"]);
    /// # Ok::<(), timebox::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load), for both parts; the errors of both are
    /// reported together. A `section` named like one of timebox's own
    /// tables (`server`, `stream`, `http`, `breaker`, in any case) is an
    /// error: taking it out would leave the [`Config`] its defaults.
    pub fn load_with<T: DeserializeOwned>(
        &self,
        section: &str,
    ) -> Result<(Config, T), ConfigError> {
        if let Some(own) = Layer::defaults(&Config::default(), None)?.table_named(section) {
            return Err(ConfigError::new(
                Some(section.to_owned()),
                format!(
                    "`{section}` is timebox's own `[{own}]` table: \
                     give the application's settings a section of another name"
                ),
            ));
        }
        let mut config = Figment::new();
        let mut own = Figment::new().merge(Layer::empty_table(section));
        for layer in self.layers()? {
            let (rest, taken) = layer.split_off(section);
            config = config.merge(rest);
            if let Some(taken) = taken {
                own = own.merge(taken);
            }
        }
        let config = config
            .extract::<Config>()
            .map_err(|err| layers::to_config_error(err, &config));
        let own = own.focus(section);
        let app = own
            .extract::<T>()
            .map_err(|err| layers::to_config_error_under(err, &own, Some(section)));
        match (config, app) {
            (Ok(config), Ok(app)) => Ok((config, app)),
            (Err(mut errors), Err(more)) => {
                errors.extend(more);
                Err(errors)
            }
            (Err(errors), _) | (_, Err(errors)) => Err(errors),
        }
    }

    /// Every source as a figment layer, lowest first.
    fn layers(&self) -> Result<impl Iterator<Item = Layer>, ConfigError> {
        let profile = self.resolve_profile()?;
        let base = match profile {
            Some(profile) => Config::preset(profile),
            None => Config::default(),
        };
        let mut layers = vec![Layer::defaults(&base, profile)?];
        for source in &self.toml {
            let layer = match source {
                TomlSource::Text(text) => Some(Layer::toml_str(text)?),
                TomlSource::File(path) => Layer::toml_file(path)?,
            };
            layers.extend(layer);
        }
        if let Some(path) = self.last_env(CONFIG_FILE_ENV) {
            layers.push(Layer::toml_file_named_by(Path::new(path), CONFIG_FILE_ENV)?);
        }
        layers.extend(Layer::env(&self.env)?);
        Ok(layers.into_iter())
    }

    /// The value of the last pair named `name`, unless it is empty: a
    /// variable set but empty (as container specs often leave one) is read
    /// as not set rather than as a typo.
    fn last_env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(pair, _)| pair == name)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.trim().is_empty())
    }

    /// The profile: the last non-empty `TIMEBOX_PROFILE` pair, else the one
    /// set in code.
    fn resolve_profile(&self) -> Result<Option<Profile>, ConfigError> {
        match self.last_env(PROFILE_ENV).map(str::trim) {
            None => Ok(self.profile),
            Some(value) => Profile::from_name(value).map(Some).ok_or_else(|| {
                ConfigError::new(
                    None,
                    format!(
                        "environment variable `{PROFILE_ENV}` is `{value}`; \
                         expected `dev` or `prod`"
                    ),
                )
            }),
        }
    }
}

impl Config {
    /// Loads the configuration of this process.
    ///
    /// Reads [`CONFIG_FILE`] (`timebox.toml`) from the current directory if it
    /// exists, then the file `TIMEBOX_CONFIG` names if it is set
    /// ([`CONFIG_FILE_ENV`]), the profile from `TIMEBOX_PROFILE` and keys from
    /// `TIMEBOX_<SECTION>__<KEY>` variables; see the [module docs](super) for
    /// the order. The result is not validated: [`Config::validate`] is what
    /// refuses to start.
    ///
    /// # Errors
    ///
    /// As [`Loader::load`].
    pub fn load() -> Result<Self, ConfigError> {
        Loader::new().toml_file(CONFIG_FILE).env().load()
    }

    /// The built-in defaults overridden by one TOML document; no profile and
    /// no environment.
    ///
    /// # Examples
    ///
    /// ```
    /// use timebox::config::Config;
    ///
    /// let config = Config::from_toml_str(
    ///     r#"
    ///     [server.timeouts]
    ///     request_timeout_ms = 5000
    ///
    ///     [http.client.retry_budget]
    ///     retry_ratio = 0.2
    ///     "#,
    /// )?;
    /// assert_eq!(config.server.timeouts.request_timeout_ms, Some(5000));
    /// assert_eq!(config.http.client.retry_budget.retry_ratio, 0.2);
    /// assert_eq!(config.http.client.retry_budget.capacity, 500); // default
    ///
    /// let err = Config::from_toml_str("[http.client]\ntimeout_secs = \"soon\"").unwrap_err();
    /// assert_eq!(err.keys().collect::<Vec<_>>(), ["http.client.timeout_secs"]);
    /// # Ok::<(), timebox::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Invalid TOML, an unknown key or a value of the wrong type.
    pub fn from_toml_str(toml: &str) -> Result<Self, ConfigError> {
        Loader::new().toml_str(toml).load()
    }
}
