//! `Config::validate`: the errors that refuse a start, and the warnings.

use std::time::Duration;

use super::breaker::MOST_WINDOW_BUCKETS;
use super::grpc::is_method_name;
use super::{
    dotted_key, AdmissionConfig, BreakerConfig, BudgetConfig, ClientConfig, Config, ConfigError,
    GrpcConfig, HedgeConfig, MethodTimeout, ServerConfig, StreamConfig, Warning,
};
use crate::deadline::Format;

impl Config {
    /// Checks the values: errors refuse a start, warnings should be logged.
    ///
    /// Same as [`validate_with_route_deadline(None)`](Self::validate_with_route_deadline):
    /// only the global request deadline is known here.
    ///
    /// # Errors
    ///
    /// Every invalid value at once, each naming its key; see
    /// [`validate_with_route_deadline`](Self::validate_with_route_deadline).
    pub fn validate(&self) -> Result<Vec<Warning>, ConfigError> {
        self.validate_with_route_deadline(None)
    }

    /// Checks the values, knowing the longest per-route deadline override.
    ///
    /// A server layer that knows its routes passes the longest `timeout_ms`
    /// override, so the shutdown warning covers it too; routes without a
    /// deadline are not counted.
    ///
    /// Warnings:
    /// - `server.shutdown_timeout_secs` is shorter than the longest request
    ///   deadline (the global `request_timeout_ms`,
    ///   `longest_route_override`, or a gRPC call's: `server.grpc`'s
    ///   `default_timeout_ms` or a method's) plus 5 s, so requests still
    ///   running at shutdown may be cut.
    /// - `stream.stream_inactivity_timeout_secs` is set but shorter than
    ///   `http.client.timeout_secs`, so a slow tool call can end a stream
    ///   unless the stream's watchdog is suspended around it.
    /// - `server.timeouts.deadline_headers` is empty while
    ///   `accept_deadline_header` is on, or `http.client.deadline_headers`
    ///   while `send_deadline_header` is on: no HTTP deadline header is
    ///   read, or sent (gRPC's `grpc-timeout` still is).
    /// - With the retry budget on, a `transient_cost`, `throttling_cost` or
    ///   `http.client.hedge.hedge_cost` above `capacity`: the bucket can
    ///   never pay for that retry or hedge, so none is made.
    ///
    /// # Errors
    ///
    /// A `http.client.timeout_secs` of 0. A
    /// `http.client.retry_budget.max_hosts` of 0 (it bounds the breakers'
    /// table too). With `http.client.retry_budget.enabled` (and only then):
    /// a `capacity`, `transient_cost` or `throttling_cost` of 0, a
    /// `retry_ratio` outside `0.0..=1.0` or NaN. With `breaker.enabled` (and
    /// only then): a `window_secs`, `window_buckets`, `minimum_sample_count`,
    /// `open_secs` or `half_open_trials` of 0; a `window_secs` or
    /// `open_secs` longer than a day; more than 1000
    /// `window_buckets`; a window that does not split into buckets of whole
    /// milliseconds; a `failure_ratio_threshold` or
    /// `slow_call_rate_threshold` outside `(0.0, 1.0]`. A
    /// `stream.heartbeat_secs` longer than a day. In `server`: a
    /// `shutdown_timeout_secs`, `prestop_grace_secs` or `drain_force_secs`
    /// longer than a day; a
    /// `header_read_timeout_ms`, `keep_alive_timeout_secs` or
    /// `max_connection_age_secs` longer than a day (no bound at all; `0` is
    /// how to turn one off); a
    /// `server.grpc.methods` name that is not
    /// `/package.Service/Method`, or a method deadline of 0; a name in
    /// `server.timeouts.deadline_headers` or `http.client.deadline_headers`
    /// that is not a deadline header of that direction. In
    /// `server.admission`: a `max_reject_fraction` outside `0.0..=1.0`, a
    /// `queue.target_ms` or `queue.interval_ms` of 0 or over a day, a target
    /// longer than the interval. In `http.client.hedge`, whether `enabled` or not
    /// (`RequestBuilder::hedge()` uses them either way): a `delay_ms` or
    /// `hedge_cost` of 0, a `max_extra_load` outside `0.0..=1.0`.
    pub fn validate_with_route_deadline(
        &self,
        longest_route_override: Option<Duration>,
    ) -> Result<Vec<Warning>, ConfigError> {
        let mut errors = ConfigError::empty();
        check_budget(&self.http.client.retry_budget, &mut errors);
        check_breaker(&self.breaker, &mut errors);
        check_connection_bounds(&self.server, &mut errors);
        check_shutdown_waits(&self.server, &mut errors);
        check_heartbeat(&self.stream, &mut errors);
        check_grpc_methods(&self.server.grpc, &mut errors);
        check_admission(&self.server.admission, &mut errors);
        check_hedge(&self.http.client.hedge, &mut errors);
        check_attempt_timeout(&self.http.client, &mut errors);
        check_deadline_headers(
            "server.timeouts.deadline_headers",
            &self.server.timeouts.deadline_headers,
            Format::is_inbound,
            &mut errors,
        );
        check_deadline_headers(
            "http.client.deadline_headers",
            &self.http.client.deadline_headers,
            Format::is_outbound,
            &mut errors,
        );
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut warnings = Vec::new();
        self.warn_shutdown(longest_route_override, &mut warnings);
        self.warn_inactivity(&mut warnings);
        self.warn_no_deadline_headers(&mut warnings);
        self.warn_costs_beyond_capacity(&mut warnings);
        Ok(warnings)
    }
}

fn check_budget(budget: &BudgetConfig, errors: &mut ConfigError) {
    // It bounds the breakers' and the hedging stats' tables too, so it
    // counts with the budget off.
    if budget.max_hosts == 0 {
        let key = "http.client.retry_budget.max_hosts";
        errors.push(
            key,
            format!("`{key}` must be at least 1: no host would get a breaker or a budget"),
        );
    }
    if !budget.enabled {
        return;
    }
    for (name, value) in [
        ("capacity", budget.capacity),
        ("transient_cost", budget.transient_cost),
        ("throttling_cost", budget.throttling_cost),
    ] {
        if value == 0 {
            let key = format!("http.client.retry_budget.{name}");
            errors.push(
                &key,
                format!(
                    "`{key}` must be at least 1 while the retry budget is enabled \
                     (set `http.client.retry_budget.enabled = false` to turn it off)"
                ),
            );
        }
    }
    check_fraction(
        "http.client.retry_budget.retry_ratio",
        budget.retry_ratio,
        errors,
    );
}

fn check_breaker(breaker: &BreakerConfig, errors: &mut ConfigError) {
    if !breaker.enabled {
        return;
    }
    for (name, value) in [
        ("window_secs", breaker.window_secs),
        ("window_buckets", u64::from(breaker.window_buckets)),
        (
            "minimum_sample_count",
            u64::from(breaker.minimum_sample_count),
        ),
        ("open_secs", breaker.open_secs),
        ("half_open_trials", u64::from(breaker.half_open_trials)),
    ] {
        if value == 0 {
            let key = format!("breaker.{name}");
            errors.push(&key, format!("`{key}` must be at least 1"));
        }
    }
    if breaker.window_buckets > MOST_WINDOW_BUCKETS {
        let key = "breaker.window_buckets";
        errors.push(
            key,
            format!(
                "`{key}` must be at most {MOST_WINDOW_BUCKETS} (each host's breaker keeps \
                 every bucket), found {}",
                breaker.window_buckets
            ),
        );
    }
    for (name, secs) in [
        ("window_secs", breaker.window_secs),
        ("open_secs", breaker.open_secs),
    ] {
        check_at_most_a_day(
            &format!("breaker.{name}"),
            Duration::from_secs(secs),
            "; to let every call through, set `breaker.enabled = false`",
            errors,
        );
    }
    let window = Duration::from_secs(breaker.window_secs);
    let buckets = u64::from(breaker.window_buckets);
    // A window longer than a day is refused above, by its own key.
    if window <= LONGEST_BOUND && buckets > 0 {
        let window_ms = breaker.window_secs * 1000;
        if window_ms % buckets != 0 {
            let key = "breaker.window_buckets";
            errors.push(
                key,
                format!(
                    "`{key}` must split the {window_ms} ms window into whole milliseconds, \
                     found {buckets} buckets"
                ),
            );
        }
    }
    for (name, ratio) in [
        ("failure_ratio_threshold", breaker.failure_ratio_threshold),
        ("slow_call_rate_threshold", breaker.slow_call_rate_threshold),
    ] {
        // 0 would open the breaker on a window without a single bad call.
        if !(ratio > 0.0 && ratio <= 1.0) {
            let key = format!("breaker.{name}");
            errors.push(
                &key,
                format!("`{key}` must be above 0.0 and at most 1.0, found {ratio}"),
            );
        }
    }
}

/// Each name in `key`'s list is a deadline header format this side of the
/// service (`allowed`) reads or writes.
fn check_deadline_headers(
    key: &str,
    names: &[String],
    allowed: fn(Format) -> bool,
    errors: &mut ConfigError,
) {
    let known: Vec<String> = Format::ALL
        .iter()
        .copied()
        .filter(|&format| allowed(format))
        .map(|format| format!("`{format}`"))
        .collect();
    for name in names {
        if !Format::from_name(name).is_some_and(allowed) {
            errors.push(
                key,
                format!(
                    "`{key}` names `{name}`, which is not a deadline header this side knows; use {}",
                    known.join(", ")
                ),
            );
        }
    }
}

fn check_grpc_methods(grpc: &GrpcConfig, errors: &mut ConfigError) {
    for (name, timeout) in &grpc.methods {
        let key = dotted_key(&["server", "grpc", "methods", name]);
        if !is_method_name(name) {
            errors.push(
                &key,
                format!(
                    "`{key}` does not name a gRPC method: `{name}` is not a full method name; \
                     write it as the call's path says it, `/package.Service/Method`"
                ),
            );
        } else if *timeout == MethodTimeout::Millis(0) {
            errors.push(
                &key,
                format!("`{key}` must be a positive number of milliseconds; write \"off\" for no deadline"),
            );
        }
    }
}

/// The longest a connection bound, a heartbeat interval or a shutdown wait
/// may be: beyond it "off" (or "never") is what is meant, and a timer that
/// far out would overflow the clock.
pub(super) const LONGEST_BOUND: Duration = Duration::from_secs(86_400);

/// `key`'s `length` is at most [`LONGEST_BOUND`]; `advice`, from `;` or
/// `:`, ends the error.
fn check_at_most_a_day(key: &str, length: Duration, advice: &str, errors: &mut ConfigError) {
    if length > LONGEST_BOUND {
        errors.push(key, format!("`{key}` must be at most one day{advice}"));
    }
}

fn check_heartbeat(stream: &StreamConfig, errors: &mut ConfigError) {
    if let Some(interval) = stream.heartbeat() {
        check_at_most_a_day(
            "stream.heartbeat_secs",
            interval,
            "; set it to 0 for no heartbeats",
            errors,
        );
    }
}

fn check_connection_bounds(server: &ServerConfig, errors: &mut ConfigError) {
    for (name, bound) in [
        ("header_read_timeout_ms", server.header_read_timeout()),
        ("keep_alive_timeout_secs", server.keep_alive_timeout()),
        ("max_connection_age_secs", server.max_connection_age()),
    ] {
        if let Some(bound) = bound {
            check_at_most_a_day(
                &format!("server.{name}"),
                bound,
                "; set it to 0 to turn the bound off",
                errors,
            );
        }
    }
}

/// G2: shutdown never waits without a bound.
fn check_shutdown_waits(server: &ServerConfig, errors: &mut ConfigError) {
    for (name, secs) in [
        ("shutdown_timeout_secs", server.shutdown_timeout_secs),
        ("prestop_grace_secs", server.prestop_grace_secs),
        ("drain_force_secs", server.drain_force_secs),
    ] {
        check_at_most_a_day(
            &format!("server.{name}"),
            Duration::from_secs(secs),
            ": a shutdown never waits without a bound",
            errors,
        );
    }
}

fn check_fraction(key: &str, value: f64, errors: &mut ConfigError) {
    if !(0.0..=1.0).contains(&value) {
        errors.push(
            key,
            format!("`{key}` must be between 0.0 and 1.0, found {value}"),
        );
    }
}

fn check_admission(admission: &AdmissionConfig, errors: &mut ConfigError) {
    check_fraction(
        "server.admission.max_reject_fraction",
        admission.max_reject_fraction,
        errors,
    );
    let queue = &admission.queue;
    for (name, value) in [
        ("target_ms", queue.target_ms),
        ("interval_ms", queue.interval_ms),
    ] {
        let key = format!("server.admission.queue.{name}");
        if value == 0 {
            errors.push(&key, format!("`{key}` must be at least 1"));
        }
        // Without a deadline, a queued request waits until CoDel's bound:
        // it must be one.
        check_at_most_a_day(
            &key,
            Duration::from_millis(value),
            ": a queued request never waits without a bound",
            errors,
        );
    }
    if queue.target_ms > queue.interval_ms {
        let key = "server.admission.queue.target_ms";
        errors.push(
            key,
            format!(
                "`{key}` ({} ms) must not be longer than `server.admission.queue.interval_ms` ({} ms)",
                queue.target_ms, queue.interval_ms
            ),
        );
    }
}

fn check_attempt_timeout(client: &ClientConfig, errors: &mut ConfigError) {
    if client.timeout_secs == 0 {
        let key = "http.client.timeout_secs";
        errors.push(
            key,
            format!(
                "`{key}` must be at least 1: with 0 every attempt would time out before it \
                 is sent"
            ),
        );
    }
}

/// Judged whether or not `enabled` is on: `RequestBuilder::hedge()` hedges
/// one request with these values either way.
fn check_hedge(hedge: &HedgeConfig, errors: &mut ConfigError) {
    for (name, value) in [
        ("delay_ms", hedge.delay_ms.unwrap_or(1)),
        ("hedge_cost", hedge.hedge_cost),
    ] {
        if value == 0 {
            let key = format!("http.client.hedge.{name}");
            errors.push(&key, format!("`{key}` must be at least 1"));
        }
    }
    check_fraction(
        "http.client.hedge.max_extra_load",
        hedge.max_extra_load,
        errors,
    );
}
