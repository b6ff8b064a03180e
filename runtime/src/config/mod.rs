//! Settings: the [`Config`] tree, loading it, and checking it.
//!
//! [`Config`] holds every timebox setting in four sections, `server`,
//! `stream`, `http` and `breaker`. It is a plain serde type (embed it in your
//! own configuration) with documented defaults, and it can load itself.
//!
//! # Where values come from
//!
//! [`Config::load`] merges these sources, each later one winning over the
//! earlier ones key by key:
//!
//! 1. the built-in defaults (`Config::default()`);
//! 2. the profile's values, when `TIMEBOX_PROFILE` is `dev` or `prod` (see
//!    [`Profile`]);
//! 3. `timebox.toml` in the current directory, if there is one, then the
//!    file the environment variable `TIMEBOX_CONFIG` names, if it is set
//!    (it must exist: a path mistyped in a deployment is an error, not the
//!    defaults);
//! 4. environment variables `TIMEBOX_<SECTION>__<KEY>`.
//!
//! A profile only changes the defaults: a value written in the file was
//! chosen for this deployment and beats a preset, whichever profile is active.
//! The environment beats both, because it is what an operator can change at
//! deploy time without rebuilding or editing files.
//!
//! In a variable name each `__` goes one level down and the rest of the name
//! is the key, case-insensitive: `TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT_MS`
//! is `server.timeouts.request_timeout_ms`, and
//! `TIMEBOX_HTTP__CLIENT__RETRY_BUDGET__CAPACITY` is
//! `http.client.retry_budget.capacity`. Only names holding `__` after the
//! prefix are keys, so `TIMEBOX_PROFILE`, `TIMEBOX_CONFIG`, `TIMEBOX_SIM_SEED` and
//! `TIMEBOX_SIM_LIVENESS_SECS` are never read as keys. Values are read as
//! integers, floats or `true`/`false` when they look like one, else as strings;
//! a list is written in brackets, as in TOML:
//! `TIMEBOX_HTTP__CLIENT__DEADLINE_HEADERS="[x-timebox-deadline-ms, grpc-timeout]"`
//! (without them, the value is one string, which is an error naming the key).
//!
//! ```toml
//! # timebox.toml
//! [server.timeouts]
//! request_timeout_ms = 10000
//!
//! [http.client.retry_budget]
//! retry_ratio = 0.2
//!
//! [breaker]
//! cancelled_call_outcome = "failure"
//! ```
//!
//! [`Loader`] does the same from sources passed in explicitly (a profile,
//! TOML strings or files, environment pairs), which is how tests load a
//! config without touching the process environment.
//!
//! # Errors and warnings
//!
//! Loading fails with a [`ConfigError`] for an unknown key or a value of the
//! wrong type, naming the dotted key (`http.client.retry_budget.capacity`), the
//! expected type and where the value came from (the file, or the environment
//! variable). Loading does not judge values: [`Config::validate`] is what
//! refuses to start (a retry budget that can never pay for a retry, a breaker
//! that cannot count) and returns [`Warning`]s for settings that are allowed
//! but probably wrong, such as a shutdown shorter than the longest request.
//!
//! ```
//! use timebox::config::Config;
//!
//! let config = Config::from_toml_str("[http.client.retry_budget]\nretry_ratio = 1.5")?;
//! let err = config.validate().unwrap_err();
//! assert_eq!(err.keys().collect::<Vec<_>>(), ["http.client.retry_budget.retry_ratio"]);
//! # Ok::<(), timebox::config::ConfigError>(())
//! ```
//!
//! Durations carry their unit in the key (`_ms`, `_secs`). Where a timer can
//! be turned off, `0` means off, and the `Option<Duration>` accessors
//! ([`TimeoutsConfig::request_timeout`], [`StreamConfig::inactivity_timeout`],
//! ..) are the one place that rule is applied.

mod admission;
mod breaker;
mod budget;
mod error;
mod grpc;
mod layers;
mod load;
mod profile;
mod sections;
mod validate;
mod warning;

pub use admission::{
    AdmissionConfig, Concurrency, ConcurrencyParseError, DeadlineCheck, HedgeConfig, QueueConfig,
};
pub(crate) use breaker::MOST_WINDOW_BUCKETS;
pub use breaker::{BreakerConfig, CancelledCallOutcome};
pub use budget::BudgetConfig;
pub(crate) use error::dotted_key;
pub use error::ConfigError;
pub use grpc::{GrpcConfig, MethodTimeout};
pub use layers::ENV_PREFIX;
pub use load::{Loader, CONFIG_FILE, CONFIG_FILE_ENV, PROFILE_ENV};
pub use profile::Profile;
pub use sections::{ClientConfig, Config, HttpConfig, ServerConfig, StreamConfig, TimeoutsConfig};
pub use warning::Warning;
