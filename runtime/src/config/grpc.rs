//! `[server.grpc]`: the deadlines of gRPC calls that the server sets itself.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[server.grpc]`: the deadlines of gRPC calls, applied by
/// `GrpcDeadlineLayer::server` (feature `grpc`).
///
/// A call's deadline is the earliest of its `grpc-timeout` header, the
/// inbound deadline headers the server trusts (when
/// `server.timeouts.accept_deadline_header` is on: those of
/// `server.timeouts.deadline_headers`, `x-timebox-deadline-ms` by default),
/// and the method's entry in `methods` or else `default_timeout_ms`.
///
/// ```toml
/// [server.grpc]
/// default_timeout_ms = 5000
///
/// [server.grpc.methods]
/// "/fleet.Relay/Forward" = 1500
/// "/fleet.Relay/Watch" = "off"
/// ```
///
/// From the environment, a method's entry keeps the case of its name:
/// `TIMEBOX_SERVER__GRPC__METHODS__/fleet.Relay/Forward=1500`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrpcConfig {
    /// The deadline of a method without an entry in `methods`, in
    /// milliseconds. Default unset (none); `0` also means none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_timeout_ms: Option<u64>,
    /// Per-method deadlines, by full method name (`/package.Service/Method`,
    /// as the call's path says it): milliseconds, or `"off"` for none of
    /// the server's own (a caller's `grpc-timeout` still counts).
    /// [`Config::validate`](super::Config::validate) rejects a name of any
    /// other shape and a zero.
    pub methods: BTreeMap<String, MethodTimeout>,
}

/// The deadline of one gRPC method: a number of milliseconds, or `"off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodTimeout {
    /// This many milliseconds.
    Millis(u64),
    /// No deadline of the server's own.
    Off,
}

impl GrpcConfig {
    /// `default_timeout_ms` as a duration; `None` when unset or `0`.
    #[must_use]
    pub fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
    }
}

impl Serialize for MethodTimeout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Millis(ms) => serializer.serialize_u64(*ms),
            Self::Off => serializer.serialize_str("off"),
        }
    }
}

impl<'de> Deserialize<'de> for MethodTimeout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MethodTimeoutVisitor)
    }
}

struct MethodTimeoutVisitor;

impl Visitor<'_> for MethodTimeoutVisitor {
    type Value = MethodTimeout;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number of milliseconds or \"off\"")
    }

    fn visit_u64<E: de::Error>(self, ms: u64) -> Result<MethodTimeout, E> {
        Ok(MethodTimeout::Millis(ms))
    }

    fn visit_i64<E: de::Error>(self, ms: i64) -> Result<MethodTimeout, E> {
        u64::try_from(ms)
            .map(MethodTimeout::Millis)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(ms), &self))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<MethodTimeout, E> {
        if value == "off" {
            Ok(MethodTimeout::Off)
        } else {
            Err(E::invalid_value(de::Unexpected::Str(value), &self))
        }
    }
}

/// Whether `name` is a full gRPC method name: `/`, a service name of
/// dot-separated identifiers (the package first, when the proto has one),
/// `/`, and a method identifier.
pub(super) fn is_method_name(name: &str) -> bool {
    let Some((service, method)) = name.strip_prefix('/').and_then(|rest| rest.split_once('/'))
    else {
        return false;
    };
    service.split('.').all(is_identifier) && is_identifier(method)
}

fn is_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::is_method_name;

    #[test]
    fn method_names_have_a_service_and_a_method() {
        for name in [
            "/fleet.Relay/Forward",
            "/a.b.c.Service/Call_2",
            "/Greeter/SayHello",
        ] {
            assert!(is_method_name(name), "{name}");
        }
        for name in [
            "fleet.Relay/Forward",
            "/fleet.Relay",
            "/fleet.Relay/",
            "//Forward",
            "/fleet..Relay/Forward",
            "/fleet.Relay/Forward/",
            "/fleet.Relay/For ward",
            "/fleet.Relay/*",
            "",
        ] {
            assert!(!is_method_name(name), "{name}");
        }
    }
}
