//! The figment glue: each source as one provider layer, and figment's errors
//! turned into ours (figment types never reach the public API).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use figment::error::Kind;
use figment::providers::{Format, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Provider, Source};

use super::{dotted_key, Config, ConfigError, Profile};

/// The prefix of every environment variable timebox reads.
///
/// Only variables whose name goes on with a key path holding `__` are config
/// keys (`TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS`), so `TIMEBOX_PROFILE` and
/// `TIMEBOX_SIM_SEED` never are.
pub const ENV_PREFIX: &str = "TIMEBOX_";

/// Name of the environment layer's metadata; errors look it up to say
/// "in environment variable `..`".
const ENV_LAYER: &str = "environment variable";

/// One source of values, already parsed: a dictionary and where it came from.
pub(super) struct Layer {
    metadata: Metadata,
    dict: Dict,
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        self.metadata.clone()
    }

    fn data(&self) -> Result<Map<figment::Profile, Dict>, figment::Error> {
        Ok(figment::Profile::Default.collect(self.dict.clone()))
    }
}

impl Layer {
    /// Every key with its default (or `profile`'s preset) value.
    pub(super) fn defaults(config: &Config, profile: Option<Profile>) -> Result<Self, ConfigError> {
        let name = match profile {
            Some(profile) => format!("profile `{profile}`"),
            None => "built-in defaults".to_owned(),
        };
        let dict = Value::serialize(config)
            .ok()
            .and_then(Value::into_dict)
            .ok_or_else(|| ConfigError::new(None, format!("cannot serialize the {name}")))?;
        Ok(Self {
            metadata: Metadata::named(name),
            dict,
        })
    }

    /// A TOML document given as a string.
    /// A layer with one empty table, `key`, under everything else: what
    /// an application's section is read from when no source sets it.
    pub(super) fn empty_table(key: &str) -> Self {
        let mut dict = Dict::new();
        dict.insert(key.to_owned(), Value::from(Dict::new()));
        Self {
            metadata: Metadata::named("built-in defaults"),
            dict,
        }
    }

    /// The name of this layer's top-level table that `key` names, ignoring
    /// ASCII case (environment variables reach a table in any case).
    pub(super) fn table_named(&self, key: &str) -> Option<&str> {
        self.dict
            .keys()
            .find(|name| name.eq_ignore_ascii_case(key))
            .map(String::as_str)
    }

    /// This layer without its top-level `key`, and `key` alone as a layer
    /// of the same origin, if this layer has it. The environment's names
    /// reach `key` in any case, as they reach timebox's own tables (a
    /// variable's name is read in lowercase).
    pub(super) fn split_off(mut self, key: &str) -> (Self, Option<Self>) {
        let found = if self.metadata.name == ENV_LAYER {
            self.table_named(key).map(str::to_owned)
        } else {
            self.dict.contains_key(key).then(|| key.to_owned())
        };
        let taken = found
            .and_then(|found| self.dict.remove(&found))
            .map(|value| {
                let mut dict = Dict::new();
                dict.insert(key.to_owned(), value);
                Self {
                    metadata: self.metadata.clone(),
                    dict,
                }
            });
        (self, taken)
    }

    pub(super) fn toml_str(text: &str) -> Result<Self, ConfigError> {
        Ok(Self {
            metadata: Metadata::named("TOML string"),
            dict: parse_toml(text, "in TOML string")?,
        })
    }

    /// The TOML file at `path`, or `None` when there is no such file.
    pub(super) fn toml_file(path: &Path) -> Result<Option<Self>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(ConfigError::new(
                    None,
                    format!("cannot read file `{}`: {err}", path.display()),
                ))
            }
        };
        Self::file_text(path, &text).map(Some)
    }

    /// The TOML file at `path`, which the environment variable `var`
    /// names: it must exist.
    pub(super) fn toml_file_named_by(path: &Path, var: &str) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|err| {
            ConfigError::new(
                None,
                format!(
                    "environment variable `{var}` names the file `{}`, \
                     which cannot be read: {err}",
                    path.display()
                ),
            )
        })?;
        Self::file_text(path, &text)
    }

    fn file_text(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let origin = format!("in file `{}`", path.display());
        Ok(Self {
            metadata: Metadata::from("file", path),
            dict: parse_toml(text, &origin)?,
        })
    }

    /// The `TIMEBOX_<SECTION>__<KEY>` variables among `vars`, or `None` when
    /// there are none.
    pub(super) fn env(vars: &[(String, String)]) -> Result<Option<Self>, ConfigError> {
        let mut dict = Dict::new();
        // Dotted key → variable name, so errors name the variable as written.
        let mut names = BTreeMap::new();
        let mut errors = ConfigError::empty();
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            if !rest.contains("__") {
                // Not a key (`TIMEBOX_SIM_SEED`), unless it names a section
                // and a key joined by one underscore where two were meant.
                if let Some(section) = misjoined_section(rest) {
                    errors.extend(ConfigError::new(
                        None,
                        format!(
                            "environment variable `{name}` sets no key: it names the section \
                             `{section}`, whose keys are set as `{ENV_PREFIX}{}__<KEY>`, with \
                             `__` between the levels of `<KEY>` too",
                            section.to_ascii_uppercase()
                        ),
                    ));
                }
                continue;
            }
            let path: Vec<String> = rest.split("__").map(level_name).collect();
            if path.iter().any(String::is_empty) {
                errors.extend(ConfigError::new(
                    None,
                    format!(
                        "environment variable `{name}` has an empty key level; \
                         write `{ENV_PREFIX}<SECTION>__<KEY>`"
                    ),
                ));
                continue;
            }
            // Parsed like figment's own `Env`: numbers, booleans, else a string.
            let value: Value = value.parse().unwrap_or_else(|never| match never {});
            insert(&mut dict, &path, value);
            let key = dotted_key(&path);
            // Names differ in case only: which one would win depends on
            // the order of the environment.
            let other = names.insert(key.clone(), name.clone());
            if let Some(other) = other.filter(|other| other != name) {
                errors.push(
                    &key,
                    format!(
                        "environment variables `{other}` and `{name}` both set `{key}`; \
                         remove one"
                    ),
                );
            }
        }
        // `TIMEBOX_A__B` and `TIMEBOX_A__B__C` make `a.b` a value and a
        // table at once: which one would win depends on the order of the
        // environment, which is no order at all.
        for (key, name) in &names {
            let under = format!("{key}.");
            if let Some((_, deeper)) = names
                .range(under.clone()..)
                .next()
                .filter(|(deeper, _)| deeper.starts_with(&under))
            {
                errors.push(
                    key,
                    format!(
                        "environment variables `{name}` and `{deeper}` both set `{key}`, \
                         one as a value and one as a table; remove one"
                    ),
                );
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        if dict.is_empty() {
            return Ok(None);
        }
        let names = Arc::new(names);
        let metadata = Metadata::named(ENV_LAYER)
            .interpolater(move |_: &figment::Profile, keys: &[&str]| env_name(&names, keys));
        Ok(Some(Self { metadata, dict }))
    }
}

/// Parses a TOML document; `origin` says where it came from ("in file `x`").
fn parse_toml(text: &str, origin: &str) -> Result<Dict, ConfigError> {
    Toml::from_str::<Dict>(text).map_err(|err| {
        let at = err
            .span()
            .and_then(|span| text.get(..span.start))
            .map(|before| {
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                format!(" at line {line}, column {column}")
            })
            .unwrap_or_default();
        ConfigError::new(
            None,
            format!(
                "invalid TOML {origin}{at}: {}",
                // Keep the error on one line, as log lines are.
                err.message().trim().replace('\n', "; ")
            ),
        )
    })
}

/// The table of [`Config`] that `rest`, a variable's name after
/// [`ENV_PREFIX`], begins with (in any case), followed by one underscore
/// (`SERVER_SHUTDOWN_TIMEOUT_SECS`). The tables' names have none.
fn misjoined_section(rest: &str) -> Option<String> {
    if is_service_link(rest) {
        return None;
    }
    let (first, _) = rest.split_once('_')?;
    let defaults = Layer::defaults(&Config::default(), None).ok()?;
    defaults.table_named(first).map(str::to_owned)
}

/// Whether `rest` is the tail of a variable Kubernetes sets in every pod
/// for each Service of its namespace (`enableServiceLinks`, on by
/// default): a Service named `timebox-server` gives
/// `TIMEBOX_SERVER_SERVICE_HOST`, `TIMEBOX_SERVER_PORT` and
/// `TIMEBOX_SERVER_PORT_80_TCP_ADDR`, which no one set to configure
/// timebox.
fn is_service_link(rest: &str) -> bool {
    let service = rest.ends_with("_SERVICE_HOST")
        || rest.ends_with("_SERVICE_PORT")
        || rest.contains("_SERVICE_PORT_");
    let port = rest.ends_with("_PORT")
        || rest.split_once("_PORT_").is_some_and(|(_, tail)| {
            let mut parts = tail.split('_');
            parts
                .next()
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                && parts
                    .next()
                    .is_some_and(|proto| matches!(proto, "TCP" | "UDP" | "SCTP"))
        });
    service || port
}

/// The key a level of a variable's name stands for: a field's name in
/// lowercase, as variables are written in any case; a level that is no
/// field's name (it has a `/` or a `.`: a gRPC method's full name, a key of
/// `server.grpc.methods`) as written, since such a key's case counts.
fn level_name(level: &str) -> String {
    if level
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        level.to_ascii_lowercase()
    } else {
        level.to_owned()
    }
}

/// Sets `path` in `dict` to `value`, making tables on the way.
fn insert(dict: &mut Dict, path: &[String], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        dict.insert(first.clone(), value);
        return;
    }
    let entry = dict
        .entry(first.clone())
        .or_insert_with(|| Value::from(Dict::new()));
    if entry.as_dict().is_none() {
        // `TIMEBOX_A__B=1` and `TIMEBOX_A__B__C=2`: an error once every
        // variable is in (see `env`); until then the deeper key wins.
        *entry = Value::from(Dict::new());
    }
    if let Value::Dict(_, inner) = entry {
        insert(inner, rest, value);
    }
}

/// The variable that set `keys` (or the first one under it, for a table).
fn env_name(names: &BTreeMap<String, String>, keys: &[&str]) -> String {
    let dotted = dotted_key(keys);
    if let Some(name) = names.get(&dotted) {
        return name.clone();
    }
    let prefix = format!("{dotted}.");
    names
        .iter()
        .find(|(key, _)| key.starts_with(&prefix))
        .map_or_else(
            || format!("{ENV_PREFIX}{}", keys.join("__").to_ascii_uppercase()),
            |(_, name)| name.clone(),
        )
}

/// Turns every error figment reports into a problem naming its key and origin.
pub(super) fn to_config_error(err: figment::Error, figment: &Figment) -> ConfigError {
    to_config_error_under(err, figment, None)
}

/// As [`to_config_error`], for a `figment` focused on the top-level table
/// `section`, whose errors name their keys from the root.
pub(super) fn to_config_error_under(
    err: figment::Error,
    figment: &Figment,
    section: Option<&str>,
) -> ConfigError {
    let mut out = ConfigError::empty();
    for one in err {
        out.extend(one_error(&one, figment, section));
    }
    out
}

fn one_error(err: &figment::Error, figment: &Figment, section: Option<&str>) -> ConfigError {
    let mut inner = err.path.clone();
    if let Kind::UnknownField(name, _) = &err.kind {
        // figment already ends the path with the unknown key; be sure it does.
        if inner.last() != Some(name) {
            inner.push(name.clone());
        }
    }
    let path: Vec<String> = section
        .map(str::to_owned)
        .into_iter()
        .chain(inner.iter().cloned())
        .collect();
    let key = dotted_key(&path);
    // The merged value at the key carries the tag of the layer that set it
    // last; figment's own metadata can point at an enclosing table's layer.
    let metadata = (!inner.is_empty())
        .then(|| figment.find_metadata(&inner.join(".")))
        .flatten()
        .or(err.metadata.as_ref());
    let origin = metadata.map(|md| origin(md, &path)).unwrap_or_default();
    let message = match &err.kind {
        Kind::UnknownField(_, expected) => {
            let valid = if expected.is_empty() {
                "this table takes no keys".to_owned()
            } else {
                format!("expected one of {}", tick_list(expected))
            };
            format!("unknown key `{key}`{origin}; {valid}")
        }
        Kind::InvalidType(actual, expected) | Kind::InvalidValue(actual, expected) => {
            format!(
                "`{key}`{origin} must be {}, found {actual}",
                describe(expected)
            )
        }
        Kind::UnknownVariant(actual, expected) => format!(
            "`{key}`{origin} must be one of {}, found `{actual}`",
            tick_list(expected)
        ),
        Kind::Message(message) if key.is_empty() => format!("{message}{origin}"),
        other => format!("`{key}`{origin}: {other}"),
    };
    ConfigError::new((!key.is_empty()).then_some(key), message)
}

/// " in file `timebox.toml`", " in environment variable `TIMEBOX_..`", ..
fn origin(metadata: &Metadata, path: &[String]) -> String {
    if let Some(Source::File(file)) = &metadata.source {
        return format!(" in file `{}`", file.display());
    }
    if metadata.name == ENV_LAYER {
        let var = metadata.interpolate(&figment::Profile::Default, path);
        return format!(" in environment variable `{var}`");
    }
    format!(" in {}", metadata.name)
}

/// What serde's "expected" names, in the words of a config file.
fn describe(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            format!("a non-negative integer ({expected})")
        }
        "f32" | "f64" => format!("a number ({expected})"),
        "a boolean" => "a boolean (`true` or `false`)".to_owned(),
        other if other.starts_with("struct ") => format!("a table ({other})"),
        "enum CancelledCallOutcome" => "`\"slow\"` or `\"failure\"`".to_owned(),
        other if other.starts_with("enum ") => format!("a string ({other})"),
        other => other.to_owned(),
    }
}

fn tick_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_name_prefers_the_variable_as_written() {
        let names = BTreeMap::from([(
            "server.bogus.x".to_owned(),
            "TIMEBOX_Server__Bogus__X".to_owned(),
        )]);
        assert_eq!(
            env_name(&names, &["server", "bogus", "x"]),
            "TIMEBOX_Server__Bogus__X"
        );
        assert_eq!(
            env_name(&names, &["server", "bogus"]),
            "TIMEBOX_Server__Bogus__X"
        );
        assert_eq!(
            env_name(&names, &["http", "client"]),
            "TIMEBOX_HTTP__CLIENT"
        );
    }

    #[test]
    fn a_deeper_env_key_replaces_a_value_on_its_path() {
        let mut dict = Dict::new();
        insert(&mut dict, &["a".into(), "b".into()], Value::from(1));
        insert(
            &mut dict,
            &["a".into(), "b".into(), "c".into()],
            Value::from(2),
        );
        let value = Value::from(dict);
        assert_eq!(value.find("a.b.c").and_then(|v| v.to_i128()), Some(2));
    }

    #[test]
    fn toml_errors_point_at_line_and_column() {
        let err = parse_toml("a = 1\nb = = 2", "in TOML string").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid TOML in TOML string at line 2, column 5: "),
            "{err}"
        );
    }
}
