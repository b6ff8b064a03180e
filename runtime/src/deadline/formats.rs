//! The deadline header formats of a fleet: timebox's own, gRPC's, Envoy's
//! and the Connect protocol's, and the sets of them a server trusts and a
//! client writes.

// Each door (server, client, gRPC) uses its part of the sets.
#![cfg_attr(
    not(all(feature = "server", feature = "client", feature = "grpc")),
    allow(dead_code)
)]

use std::fmt;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::config::{ClientConfig, TimeoutsConfig};

use super::grpc_timeout;
use super::header::{self, DEADLINE_HEADER};

/// A header that carries how long a request may take.
///
/// Inbound, a server trusts the formats listed in
/// `server.timeouts.deadline_headers` (when `accept_deadline_header` is on);
/// outbound, a client writes those in `http.client.deadline_headers`. Each
/// is parsed strictly, and a request that carries one several times uses
/// none of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// `x-timebox-deadline-ms`: the time left in whole milliseconds.
    Timebox,
    /// `grpc-timeout`: gRPC's, digits and a unit (see
    /// `timebox::grpc::timeout`).
    GrpcTimeout,
    /// `x-envoy-expected-rq-timeout-ms`: the time Envoy gives the request,
    /// in whole milliseconds, as Envoy sends it to the service behind it.
    /// Inbound only.
    EnvoyExpected,
    /// `connect-timeout-ms`: the Connect protocol's, 1 to 10 digits of
    /// milliseconds. Inbound only.
    ConnectTimeout,
    /// `x-envoy-upstream-rq-timeout-ms`: tells an egress Envoy how long to
    /// give the next hop, in whole milliseconds (at least 1: to Envoy, 0
    /// means no timeout at all). Outbound only. Envoy reads it only from a
    /// client it counts as internal, and then in place of the route's
    /// timeout, not as a bound under it.
    EnvoyUpstream,
}

impl Format {
    /// Every format, in the order they are tried.
    pub const ALL: &'static [Self] = &[
        Self::Timebox,
        Self::GrpcTimeout,
        Self::EnvoyExpected,
        Self::ConnectTimeout,
        Self::EnvoyUpstream,
    ];

    /// The header's name.
    #[must_use]
    pub const fn name(self) -> HeaderName {
        match self {
            Self::Timebox => DEADLINE_HEADER,
            Self::GrpcTimeout => grpc_timeout::GRPC_TIMEOUT,
            Self::EnvoyExpected => HeaderName::from_static("x-envoy-expected-rq-timeout-ms"),
            Self::ConnectTimeout => HeaderName::from_static("connect-timeout-ms"),
            Self::EnvoyUpstream => HeaderName::from_static("x-envoy-upstream-rq-timeout-ms"),
        }
    }

    /// The header's name, as a string.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Timebox => "x-timebox-deadline-ms",
            Self::GrpcTimeout => "grpc-timeout",
            Self::EnvoyExpected => "x-envoy-expected-rq-timeout-ms",
            Self::ConnectTimeout => "connect-timeout-ms",
            Self::EnvoyUpstream => "x-envoy-upstream-rq-timeout-ms",
        }
    }

    /// The format whose header is called `name`, in any case, as HTTP
    /// header names are (`Connect-Timeout-Ms` is `connect-timeout-ms`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|format| format.name().as_str().eq_ignore_ascii_case(name))
    }

    /// Whether a server may trust this format on a request.
    #[must_use]
    pub const fn is_inbound(self) -> bool {
        !matches!(self, Self::EnvoyUpstream)
    }

    /// Whether a client may write this format on a request.
    #[must_use]
    pub const fn is_outbound(self) -> bool {
        matches!(
            self,
            Self::Timebox | Self::GrpcTimeout | Self::EnvoyUpstream
        )
    }

    /// The time one value of this format grants; `None` when it does not
    /// parse.
    #[must_use]
    pub fn parse(self, value: &HeaderValue) -> Option<Duration> {
        match self {
            Self::Timebox | Self::EnvoyExpected | Self::EnvoyUpstream => header::parse(value),
            Self::GrpcTimeout => grpc_timeout::parse(value),
            Self::ConnectTimeout => {
                let digits = value.as_bytes().trim_ascii();
                if digits.len() > 10 {
                    return None;
                }
                header::parse(value)
            }
        }
    }

    /// The time `headers` grant in this format: `None` when the header is
    /// absent, does not parse, or is there more than once.
    #[must_use]
    pub fn from_headers(self, headers: &HeaderMap) -> Option<Duration> {
        self.read(headers).ok().flatten()
    }

    /// What `headers` say in this format: `Ok(None)` when the header is
    /// absent, an [`Unreadable`] when it does not parse or is there more
    /// than once.
    pub(crate) fn read(self, headers: &HeaderMap) -> Result<Option<Duration>, Unreadable> {
        let mut values = headers.get_all(self.name()).iter();
        let Some(first) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(Unreadable::Repeated(self));
        }
        match self.parse(first) {
            Some(left) => Ok(Some(left)),
            None => Err(Unreadable::Malformed(self, first.clone())),
        }
    }

    /// What a value of this format looks like, for an error.
    const fn form(self) -> &'static str {
        match self {
            Self::Timebox | Self::EnvoyExpected | Self::EnvoyUpstream => {
                "a whole number of milliseconds"
            }
            Self::GrpcTimeout => "1 to 8 digits and a unit (H, M, S, m, u or n)",
            Self::ConnectTimeout => "1 to 10 digits of milliseconds",
        }
    }

    /// This format's value for `remaining`, rounded down; `None` when it
    /// has none (`grpc-timeout` for zero).
    #[must_use]
    pub fn to_value(self, remaining: Duration) -> Option<HeaderValue> {
        match self {
            Self::GrpcTimeout => grpc_timeout::encode(remaining),
            Self::EnvoyUpstream => Some(header::to_value(remaining.max(Duration::from_millis(1)))),
            Self::Timebox | Self::EnvoyExpected | Self::ConnectTimeout => {
                Some(header::to_value(remaining))
            }
        }
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().as_str())
    }
}

/// A deadline header that says no deadline: why, naming the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// The header is there more than once.
    Repeated(Format),
    /// Its one value does not parse.
    Malformed(Format, HeaderValue),
}

/// The most of a value an [`Unreadable`] repeats: a caller chooses how long
/// it is, and it ends up in a log line.
const SHOWN: usize = 32;

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Repeated(format) => write!(f, "the header `{format}` is set more than once"),
            Self::Malformed(format, value) => {
                let bytes = value.as_bytes();
                let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN)]);
                let cut = if bytes.len() > SHOWN { "…" } else { "" };
                write!(
                    f,
                    "the header `{format}` is {shown:?}{cut}, not {}",
                    format.form()
                )
            }
        }
    }
}

/// A set of formats: the ones a server trusts, or a client writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Formats(u8);

impl Formats {
    /// The formats named in `names`, the setting `key`'s; names of no
    /// format, or of one that does not go this way, are left out. With
    /// `say`, an `error!` line says so ([`Config::validate`] rejects them,
    /// but a config that was not validated would otherwise lose its
    /// deadline headers without a word).
    ///
    /// [`Config::validate`]: crate::config::Config::validate
    pub(crate) fn named(
        names: &[String],
        allowed: fn(Format) -> bool,
        key: &'static str,
        say: bool,
    ) -> Self {
        names.iter().fold(Self(0), |set, name| {
            match Format::from_name(name).filter(|&format| allowed(format)) {
                Some(format) => Self(set.0 | format.bit()),
                None => {
                    if !say {
                        return set;
                    }
                    tracing::error!(
                        key,
                        name = name.as_str(),
                        "`{key}` names `{name}`, which is not a deadline header this side \
                         knows: it is left out (`Config::validate` refuses it)"
                    );
                    set
                }
            }
        })
    }

    /// What a server trusts: `deadline_headers` when
    /// `accept_deadline_header` is on, else nothing. A name left out is
    /// said.
    pub(crate) fn trusted(timeouts: &TimeoutsConfig) -> Self {
        Self::trusted_saying(timeouts, true)
    }

    /// As [`trusted`](Self::trusted), saying nothing of a name left out:
    /// for a door that logged its config's errors already.
    pub(crate) fn trusted_unsaid(timeouts: &TimeoutsConfig) -> Self {
        Self::trusted_saying(timeouts, false)
    }

    fn trusted_saying(timeouts: &TimeoutsConfig, say: bool) -> Self {
        if !timeouts.accept_deadline_header {
            return Self::default();
        }
        Self::named(
            &timeouts.deadline_headers,
            Format::is_inbound,
            "server.timeouts.deadline_headers",
            say,
        )
    }

    /// What a client writes: `deadline_headers` when `send_deadline_header`
    /// is on, else nothing.
    pub(crate) fn written(client: &ClientConfig) -> Self {
        if !client.send_deadline_header {
            return Self::default();
        }
        Self::named(
            &client.deadline_headers,
            Format::is_outbound,
            "http.client.deadline_headers",
            true,
        )
    }

    /// Whether the set is empty.
    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `format` is in the set.
    pub(crate) const fn contains(self, format: Format) -> bool {
        self.0 & format.bit() != 0
    }

    /// Without `format`.
    pub(crate) const fn without(self, format: Format) -> Self {
        Self(self.0 & !format.bit())
    }

    fn iter(self) -> impl Iterator<Item = Format> {
        Format::ALL
            .iter()
            .copied()
            .filter(move |format| self.0 & format.bit() != 0)
    }

    /// The earliest time any trusted format in `headers` grants, and which.
    /// A trusted header that does not parse, or is there more than once,
    /// grants nothing; a `debug!` line says so.
    pub(crate) fn earliest(self, headers: &HeaderMap) -> Option<(Duration, Format)> {
        if self.is_empty() || headers.is_empty() {
            return None;
        }
        self.iter()
            .filter_map(|format| Some((trusted_value(format, headers)?, format)))
            .min_by_key(|(left, _)| *left)
    }

    /// The set with `format` added.
    pub(crate) const fn with(self, format: Format) -> Self {
        Self(self.0 | format.bit())
    }

    /// The earliest deadline a caller set in `headers` in one of the set's
    /// formats: the time it grants, its format and its value as set. An
    /// `x-envoy-upstream-rq-timeout-ms` of 0 is none: to Envoy it means no
    /// timeout at all. A header that does not parse, or is there more than
    /// once, grants nothing; a `warn!` line says so.
    pub(crate) fn set_by_caller(
        self,
        headers: &HeaderMap,
    ) -> Option<(Duration, Format, HeaderValue)> {
        if self.is_empty() || headers.is_empty() {
            return None;
        }
        let (left, format) = self
            .iter()
            .filter_map(|format| Some((callers_value(format, headers)?, format)))
            .filter(|&(left, format)| !(format == Format::EnvoyUpstream && left.is_zero()))
            .min_by_key(|(left, _)| *left)?;
        let value = headers.get(format.name())?.clone();
        Some((left, format, value))
    }

    /// Writes every format of the set for `remaining` into `headers`,
    /// replacing what was there.
    pub(crate) fn write(self, remaining: Duration, headers: &mut HeaderMap) {
        for format in self.iter() {
            match format.to_value(remaining) {
                Some(value) => headers.insert(format.name(), value),
                None => headers.remove(format.name()),
            };
        }
    }
}

/// The time a trusted `format` in the `headers` of a request a server
/// received grants; `None` when it is absent, and when it does not parse
/// or is repeated, which a `debug!` line names (a warning per request would
/// let any caller fill the log).
pub(crate) fn trusted_value(format: Format, headers: &HeaderMap) -> Option<Duration> {
    format.read(headers).unwrap_or_else(|unreadable| {
        tracing::debug!(
            header = format.as_str(),
            "ignored a deadline header: {unreadable}"
        );
        None
    })
}

/// The time `format` grants in the `headers` the caller set on an outbound
/// request; `None` when it is absent, and when it does not parse or is
/// repeated, which a `warn!` line names: the caller meant a deadline, and
/// the call goes without it.
fn callers_value(format: Format, headers: &HeaderMap) -> Option<Duration> {
    format.read(headers).unwrap_or_else(|unreadable| {
        tracing::warn!(
            header = format.as_str(),
            "ignored a deadline header set on an outbound request: {unreadable}"
        );
        None
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::{HeaderMap, HeaderValue};

    use super::{Format, Formats, Unreadable};

    fn value(text: &'static str) -> HeaderValue {
        HeaderValue::from_static(text)
    }

    #[test]
    fn a_callers_earliest_value_wins_and_an_envoy_zero_is_none() {
        let both = Formats::default()
            .with(Format::Timebox)
            .with(Format::EnvoyUpstream);
        let mut headers = HeaderMap::new();
        headers.insert(Format::EnvoyUpstream.name(), value("0"));
        assert_eq!(
            both.set_by_caller(&headers),
            None,
            "0 means no timeout to Envoy"
        );
        headers.insert(Format::Timebox.name(), value("300"));
        assert_eq!(
            both.set_by_caller(&headers),
            Some((Duration::from_millis(300), Format::Timebox, value("300")))
        );
        headers.insert(Format::EnvoyUpstream.name(), value("200"));
        assert_eq!(
            both.set_by_caller(&headers),
            Some((
                Duration::from_millis(200),
                Format::EnvoyUpstream,
                value("200")
            ))
        );
    }

    #[test]
    fn a_callers_header_that_does_not_parse_or_repeats_grants_nothing_and_is_named() {
        let both = Formats::default()
            .with(Format::Timebox)
            .with(Format::GrpcTimeout);
        let mut headers = HeaderMap::new();
        headers.insert(Format::Timebox.name(), value("300"));
        headers.insert(Format::GrpcTimeout.name(), value("5s"));
        assert_eq!(
            both.set_by_caller(&headers),
            Some((Duration::from_millis(300), Format::Timebox, value("300"))),
            "the header that parses still counts"
        );
        let unreadable = Format::GrpcTimeout.read(&headers).unwrap_err();
        assert_eq!(
            unreadable,
            Unreadable::Malformed(Format::GrpcTimeout, value("5s"))
        );
        assert_eq!(
            unreadable.to_string(),
            "the header `grpc-timeout` is \"5s\", not 1 to 8 digits and a unit (H, M, S, m, u or n)"
        );
        // A long value is cut short: a caller chooses its length, and the
        // text ends up in a log line.
        let long = "9".repeat(100) + "s";
        headers.insert(
            Format::GrpcTimeout.name(),
            HeaderValue::from_str(&long).unwrap(),
        );
        assert_eq!(
            Format::GrpcTimeout.read(&headers).unwrap_err().to_string(),
            format!(
                "the header `grpc-timeout` is \"{}\"…, not 1 to 8 digits and a unit (H, M, S, m, u \
                 or n)",
                "9".repeat(32)
            )
        );
        headers.remove(Format::GrpcTimeout.name());
        headers.append(Format::Timebox.name(), value("200"));
        assert_eq!(both.set_by_caller(&headers), None, "none of its values");
        assert_eq!(
            Format::Timebox.read(&headers).unwrap_err().to_string(),
            "the header `x-timebox-deadline-ms` is set more than once"
        );
    }

    #[test]
    fn each_inbound_format_parses_strictly() {
        let ms = Duration::from_millis;
        for (format, text, expected) in [
            (Format::Timebox, "1500", Some(ms(1500))),
            (Format::Timebox, "1.5", None),
            (Format::GrpcTimeout, "1500m", Some(ms(1500))),
            (Format::GrpcTimeout, "1500", None),
            (Format::EnvoyExpected, " 250 ", Some(ms(250))),
            (Format::EnvoyExpected, "250ms", None),
            (Format::EnvoyExpected, "-1", None),
            (
                Format::ConnectTimeout,
                "9999999999",
                Some(ms(9_999_999_999)),
            ),
            (Format::ConnectTimeout, "10000000000", None),
            (Format::ConnectTimeout, "", None),
        ] {
            assert_eq!(format.parse(&value(text)), expected, "{format} {text:?}");
        }
    }

    #[test]
    fn the_earliest_trusted_value_wins_and_a_repeated_header_is_no_value() {
        let names = [
            "grpc-timeout".to_owned(),
            "x-envoy-expected-rq-timeout-ms".to_owned(),
        ];
        let trusted = Formats::named(&names, Format::is_inbound, "test.deadline_headers", true);
        let mut headers = HeaderMap::new();
        headers.insert("grpc-timeout", value("2S"));
        headers.insert("x-envoy-expected-rq-timeout-ms", value("700"));
        headers.insert("x-timebox-deadline-ms", value("10"));
        assert_eq!(
            trusted.earliest(&headers),
            Some((Duration::from_millis(700), Format::EnvoyExpected)),
            "the untrusted 10 ms is ignored"
        );
        headers.insert("grpc-timeout", value("500m"));
        assert_eq!(
            trusted.earliest(&headers),
            Some((Duration::from_millis(500), Format::GrpcTimeout)),
            "whichever format comes first"
        );
        headers.insert("grpc-timeout", value("2S"));
        headers.append("x-envoy-expected-rq-timeout-ms", value("700"));
        assert_eq!(
            trusted.earliest(&headers),
            Some((Duration::from_secs(2), Format::GrpcTimeout))
        );
    }

    #[test]
    fn names_of_the_wrong_direction_are_left_out() {
        let names = ["x-envoy-upstream-rq-timeout-ms".to_owned()];
        assert!(
            Formats::named(&names, Format::is_inbound, "test.deadline_headers", true).is_empty()
        );
        assert!(
            !Formats::named(&names, Format::is_outbound, "test.deadline_headers", true).is_empty()
        );
    }

    #[test]
    fn writing_rounds_down_and_never_tells_envoy_zero() {
        let names = [
            "x-timebox-deadline-ms".to_owned(),
            "grpc-timeout".to_owned(),
            "x-envoy-upstream-rq-timeout-ms".to_owned(),
        ];
        let mut headers = HeaderMap::new();
        Formats::named(&names, Format::is_outbound, "test.deadline_headers", true)
            .write(Duration::from_micros(1_500_900), &mut headers);
        assert_eq!(headers["x-timebox-deadline-ms"], "1500");
        assert_eq!(headers["grpc-timeout"], "1500m");
        assert_eq!(headers["x-envoy-upstream-rq-timeout-ms"], "1500");
        Formats::named(&names, Format::is_outbound, "test.deadline_headers", true)
            .write(Duration::from_micros(400), &mut headers);
        assert_eq!(headers["x-envoy-upstream-rq-timeout-ms"], "1");
        assert_eq!(headers["grpc-timeout"], "400u");
    }
}
