//! [`Warning`]: a setting that is allowed but probably not what was meant,
//! and the checks that find them.

use std::fmt;
use std::time::Duration;

use super::validate::LONGEST_BOUND;
use super::{Config, MethodTimeout};

/// Margin `server.shutdown_timeout_secs` should keep over the longest request
/// deadline, so a request admitted just before shutdown can finish.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(5);

/// A setting that is allowed but probably not what was meant.
///
/// [`Config::validate`] returns warnings for the caller to log at startup.
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
///
/// let mut config = Config::default();
/// config.server.timeouts.request_timeout_ms = Some(30_000);
/// let warnings = config.validate().unwrap();
/// assert_eq!(warnings[0].key(), "server.shutdown_timeout_secs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    key: &'static str,
    message: String,
}

impl Warning {
    /// The dotted key the warning is about, e.g. `server.shutdown_timeout_secs`.
    #[must_use]
    pub fn key(&self) -> &str {
        self.key
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Config {
    /// With the retry budget on, a retry or a hedge that costs more tokens
    /// than the bucket holds can never be paid for: that kind is off, which
    /// a small `capacity` may mean to do, but should say.
    pub(super) fn warn_costs_beyond_capacity(&self, warnings: &mut Vec<Warning>) {
        let budget = &self.http.client.retry_budget;
        if !budget.enabled {
            return;
        }
        for (key, cost, what) in [
            (
                "http.client.retry_budget.transient_cost",
                budget.transient_cost,
                "no retry after a 5xx, a failed connect or a timeout",
            ),
            (
                "http.client.retry_budget.throttling_cost",
                budget.throttling_cost,
                "no retry after a 429 or a shed 503",
            ),
            (
                "http.client.hedge.hedge_cost",
                self.http.client.hedge.hedge_cost,
                "no hedge",
            ),
        ] {
            if cost > budget.capacity {
                warnings.push(Warning {
                    key,
                    message: format!(
                        "`{key}` is {cost}, more than the retry budget's bucket holds \
                         (`http.client.retry_budget.capacity` = {}), so {what} can ever be \
                         paid for; lower the cost or raise the capacity",
                        budget.capacity
                    ),
                });
            }
        }
    }

    /// A side that is told to read or write deadline headers and lists
    /// none does neither.
    pub(super) fn warn_no_deadline_headers(&self, warnings: &mut Vec<Warning>) {
        let timeouts = &self.server.timeouts;
        if timeouts.accept_deadline_header && timeouts.deadline_headers.is_empty() {
            warnings.push(Warning {
                key: "server.timeouts.deadline_headers",
                message: "`server.timeouts.deadline_headers` is empty, so no inbound HTTP \
                          deadline header is trusted though \
                          `server.timeouts.accept_deadline_header` is on (a gRPC call's \
                          `grpc-timeout` still counts); list the formats to trust, or turn it \
                          off"
                .to_owned(),
            });
        }
        let client = &self.http.client;
        if client.send_deadline_header && client.deadline_headers.is_empty() {
            warnings.push(Warning {
                key: "http.client.deadline_headers",
                message: "`http.client.deadline_headers` is empty, so no HTTP call sends a \
                          deadline header though `http.client.send_deadline_header` is on (a \
                          gRPC call still sends `grpc-timeout`); list the formats to send, or \
                          turn it off"
                    .to_owned(),
            });
        }
    }

    pub(super) fn warn_shutdown(
        &self,
        longest_route_override: Option<Duration>,
        warnings: &mut Vec<Warning>,
    ) {
        // gRPC calls count in flight too (with the server layer's shutdown).
        let grpc = &self.server.grpc;
        let longest_method = grpc
            .methods
            .values()
            .filter_map(|timeout| match *timeout {
                MethodTimeout::Millis(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                MethodTimeout::Millis(_) | MethodTimeout::Off => None,
            })
            .max();
        let Some(longest) = self
            .server
            .timeouts
            .request_timeout()
            .max(longest_route_override)
            .max(grpc.default_timeout())
            .max(longest_method)
        else {
            return;
        };
        let shutdown = Duration::from_secs(self.server.shutdown_timeout_secs);
        let needed = longest.saturating_add(SHUTDOWN_MARGIN);
        if shutdown < needed {
            // What to set it to, when a value validation takes covers it.
            let advice = if needed <= LONGEST_BOUND {
                format!(
                    "set it to at least {}",
                    needed.as_secs() + u64::from(needed.subsec_nanos() > 0)
                )
            } else {
                "no shutdown can wait that long (it waits at most one day): shorten the \
                 deadline"
                    .to_owned()
            };
            warnings.push(Warning {
                key: "server.shutdown_timeout_secs",
                message: format!(
                    "`server.shutdown_timeout_secs` is {} s, shorter than the longest \
                     request or gRPC call deadline ({} ms) plus 5 s; requests running \
                     at shutdown may be cut, {advice}",
                    shutdown.as_secs(),
                    longest.as_millis(),
                ),
            });
        }
    }

    pub(super) fn warn_inactivity(&self, warnings: &mut Vec<Warning>) {
        let inactivity = self.stream.stream_inactivity_timeout_secs;
        let tool_call = self.http.client.timeout_secs;
        if inactivity > 0 && inactivity < tool_call {
            warnings.push(Warning {
                key: "stream.stream_inactivity_timeout_secs",
                message: format!(
                    "`stream.stream_inactivity_timeout_secs` is {inactivity} s, shorter \
                     than `http.client.timeout_secs` ({tool_call} s); a slow tool call \
                     ends the stream unless the watchdog is suspended around it"
                ),
            });
        }
    }
}
