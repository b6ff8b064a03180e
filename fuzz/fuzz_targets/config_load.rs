//! Configuration loading (DESIGN §9): any TOML document, plus any
//! environment variables, given to the loader, then validated.
//!
//! The input, as UTF-8, is split on NUL: the first part is the TOML
//! document, every later part one `NAME=VALUE` environment pair (a part
//! without `=` is a name with an empty value). Nothing may panic; every error
//! says something; validation errors name their keys; warnings name theirs.

#![no_main]

use libfuzzer_sys::fuzz_target;
use timebox::config::{Config, ConfigError, Loader};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let toml = parts.next().unwrap_or_default();
    let env: Vec<(&str, &str)> = parts
        .take(8)
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();

    check(Config::from_toml_str(toml));
    check(Loader::new().toml_str(toml).env_vars(env).load());
});

fn check(loaded: Result<Config, ConfigError>) {
    let config = match loaded {
        Ok(config) => config,
        Err(err) => {
            assert!(!err.to_string().is_empty(), "{err:?}");
            return;
        }
    };
    match config.validate() {
        Ok(warnings) => {
            for warning in warnings {
                assert!(!warning.key().is_empty(), "{warning:?}");
                assert!(!warning.to_string().is_empty(), "{warning:?}");
            }
        }
        Err(err) => {
            assert!(err.keys().next().is_some(), "validation names a key: {err}");
            assert!(err.keys().all(|key| !key.is_empty()), "{err:?}");
        }
    }
}
