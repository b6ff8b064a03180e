//! `timebox::config`: defaults, profiles, precedence, errors and validation
//! (DESIGN §9, B5, B6, G4).
//!
//! No test here touches the process environment (tests run in parallel):
//! environment variables are passed to the loader as pairs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use timebox::config::{
    BreakerConfig, BudgetConfig, CancelledCallOutcome, Concurrency, Config, ConfigError,
    DeadlineCheck, Loader, MethodTimeout, Profile, Warning,
};

/// A directory of its own under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("timebox-config-{}-{test}", std::process::id()));
        // A leftover from a killed run of the same pid would only be stale.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("write config file");
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn keys(err: &ConfigError) -> Vec<&str> {
    err.keys().collect()
}

fn load_env(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Loader::new().env_vars(vars.iter().copied()).load()
}

#[test]
fn defaults_equal_the_design_table() {
    let config = Config::default();

    let timeouts = &config.server.timeouts;
    assert_eq!(timeouts.request_timeout_ms, None);
    assert_eq!(timeouts.request_timeout(), None);
    assert!(!timeouts.accept_deadline_header);
    assert_eq!(config.server.shutdown_timeout_secs, 30);
    assert_eq!(config.server.prestop_grace_secs, 5);
    assert_eq!(config.server.drain_force_secs, 10);
    assert_eq!(config.server.header_read_timeout_ms, 30_000);
    assert_eq!(
        config.server.header_read_timeout(),
        Some(Duration::from_secs(30))
    );
    assert_eq!(config.server.keep_alive_timeout_secs, 75);
    assert_eq!(
        config.server.keep_alive_timeout(),
        Some(Duration::from_secs(75))
    );

    assert_eq!(config.stream.first_chunk_timeout_secs, 90);
    assert_eq!(config.stream.stream_timeout_secs, 900);
    assert_eq!(config.stream.stream_inactivity_timeout_secs, 0);
    assert_eq!(config.stream.inactivity_timeout(), None);
    assert_eq!(config.stream.heartbeat_secs, 15);

    let client = &config.http.client;
    assert_eq!(client.timeout_secs, 30);
    assert_eq!(client.max_retries, 3);
    assert_eq!(client.max_backoff_ms, 20_000);
    assert_eq!(client.max_retry_after_secs, 10);
    assert!(client.send_deadline_header);

    let budget: &BudgetConfig = &client.retry_budget;
    assert!(budget.enabled);
    assert_eq!(budget.capacity, 500);
    assert_eq!(budget.transient_cost, 14);
    assert_eq!(budget.throttling_cost, 5);
    assert!((budget.retry_ratio - 0.1).abs() < f64::EPSILON);
    assert_eq!(budget.max_hosts, 1024);
    assert_eq!(*budget, BudgetConfig::default());

    let breaker = &config.breaker;
    assert!(breaker.enabled);
    assert_eq!(breaker.window_secs, 10);
    assert_eq!(breaker.window_buckets, 10);
    assert!((breaker.failure_ratio_threshold - 0.5).abs() < f64::EPSILON);
    assert!((breaker.slow_call_rate_threshold - 1.0).abs() < f64::EPSILON);
    assert_eq!(breaker.minimum_sample_count, 10);
    assert_eq!(breaker.open_secs, 60);
    assert_eq!(breaker.half_open_trials, 3);
    assert_eq!(breaker.slow_call_duration_threshold_secs, 60);
    assert_eq!(
        breaker.slow_call_duration_threshold(),
        Some(Duration::from_secs(60))
    );
    assert_eq!(breaker.cancelled_call_outcome, CancelledCallOutcome::Slow);
    assert_eq!(*breaker, BreakerConfig::default());
}

#[test]
fn loading_nothing_gives_the_defaults() {
    assert_eq!(Loader::new().load().unwrap(), Config::default());
    assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    assert_eq!(load_env(&[]).unwrap(), Config::default());
}

#[test]
fn the_defaults_validate_without_warnings() {
    assert_eq!(Config::default().validate().unwrap(), []);
    assert_eq!(Config::preset(Profile::Prod).validate().unwrap(), []);
    assert_eq!(Config::preset(Profile::Dev).validate().unwrap(), []);
}

#[test]
fn the_prod_profile_sets_the_prod_column_and_nothing_else() {
    let mut expected = Config::default();
    expected.server.timeouts.request_timeout_ms = Some(30_000);
    expected.server.shutdown_timeout_secs = 35;
    expected.server.prestop_grace_secs = 5;
    expected.server.drain_force_secs = 10;

    assert_eq!(Config::preset(Profile::Prod), expected);
    assert_eq!(
        Loader::new().profile(Profile::Prod).load().unwrap(),
        expected
    );
    assert_eq!(load_env(&[("TIMEBOX_PROFILE", "prod")]).unwrap(), expected);
}

#[test]
fn the_dev_profile_sets_the_dev_column_and_nothing_else() {
    let mut expected = Config::default();
    expected.server.shutdown_timeout_secs = 1;
    expected.server.prestop_grace_secs = 0;
    expected.server.drain_force_secs = 10;

    assert_eq!(Config::preset(Profile::Dev), expected);
    assert_eq!(
        Loader::new().profile(Profile::Dev).load().unwrap(),
        expected
    );
    assert_eq!(load_env(&[("TIMEBOX_PROFILE", "dev")]).unwrap(), expected);
}

#[test]
fn timebox_profile_in_the_environment_beats_the_profile_set_in_code() {
    let config = Loader::new()
        .profile(Profile::Prod)
        .env_vars([("TIMEBOX_PROFILE", "dev")])
        .load()
        .unwrap();
    assert_eq!(config, Config::preset(Profile::Dev));
}

#[test]
fn an_empty_timebox_profile_means_no_profile() {
    assert_eq!(
        load_env(&[("TIMEBOX_PROFILE", "")]).unwrap(),
        Config::default()
    );
}

#[test]
fn an_unknown_timebox_profile_is_an_error_naming_the_variable() {
    let err = load_env(&[("TIMEBOX_PROFILE", "staging")]).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("TIMEBOX_PROFILE"), "{message}");
    assert!(message.contains("staging"), "{message}");
    assert!(message.contains("`dev` or `prod`"), "{message}");
    assert!("staging".parse::<Profile>().is_err());
}

#[test]
fn the_environment_beats_the_toml_file() {
    let dir = TempDir::new("env_beats_toml");
    let file = dir.write(
        "timebox.toml",
        "[server.timeouts]\nrequest_timeout_ms = 1000\n\n[http.client.retry_budget]\ncapacity = 50\n",
    );
    let config = Loader::new()
        .toml_file(&file)
        .env_vars([
            ("TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT_MS", "2500"),
            ("TIMEBOX_HTTP__CLIENT__RETRY_BUDGET__RETRY_RATIO", "0.25"),
        ])
        .load()
        .unwrap();
    assert_eq!(config.server.timeouts.request_timeout_ms, Some(2500));
    assert_eq!(config.http.client.retry_budget.capacity, 50); // file only
    assert!((config.http.client.retry_budget.retry_ratio - 0.25).abs() < f64::EPSILON);
}

#[test]
fn the_toml_file_beats_the_profile_preset() {
    let config = Loader::new()
        .toml_str("[server]\nshutdown_timeout_secs = 40")
        .env_vars([("TIMEBOX_PROFILE", "prod")])
        .load()
        .unwrap();
    assert_eq!(config.server.shutdown_timeout_secs, 40);
    // Keys the file does not set keep the profile's value.
    assert_eq!(config.server.timeouts.request_timeout_ms, Some(30_000));
}

#[test]
fn zero_in_the_file_turns_off_the_prod_request_deadline() {
    let config = Loader::new()
        .profile(Profile::Prod)
        .toml_str("[server.timeouts]\nrequest_timeout_ms = 0")
        .load()
        .unwrap();
    assert_eq!(config.server.timeouts.request_timeout(), None);
}

#[test]
fn later_toml_sources_beat_earlier_ones() {
    let config = Loader::new()
        .toml_str("[stream]\nheartbeat_secs = 5\nstream_timeout_secs = 60")
        .toml_str("[stream]\nheartbeat_secs = 7")
        .load()
        .unwrap();
    assert_eq!(config.stream.heartbeat_secs, 7);
    assert_eq!(config.stream.stream_timeout_secs, 60);
}

#[test]
fn every_section_can_be_set_from_the_environment() {
    let config = load_env(&[
        ("TIMEBOX_SERVER__TIMEOUTS__ACCEPT_DEADLINE_HEADER", "true"),
        ("TIMEBOX_SERVER__DRAIN_FORCE_SECS", "20"),
        ("TIMEBOX_STREAM__STREAM_INACTIVITY_TIMEOUT_SECS", "45"),
        ("TIMEBOX_HTTP__CLIENT__SEND_DEADLINE_HEADER", "false"),
        ("TIMEBOX_HTTP__CLIENT__RETRY_BUDGET__ENABLED", "false"),
        ("TIMEBOX_HTTP__CLIENT__RETRY_BUDGET__MAX_HOSTS", "8"),
        ("TIMEBOX_BREAKER__CANCELLED_CALL_OUTCOME", "failure"),
        // An integer-looking value for a float key, and not its default.
        ("TIMEBOX_BREAKER__FAILURE_RATIO_THRESHOLD", "1"),
    ])
    .unwrap();
    assert!(config.server.timeouts.accept_deadline_header);
    assert_eq!(config.server.drain_force_secs, 20);
    assert_eq!(
        config.stream.inactivity_timeout(),
        Some(Duration::from_secs(45))
    );
    assert!(!config.http.client.send_deadline_header);
    assert!(!config.http.client.retry_budget.enabled);
    assert_eq!(config.http.client.retry_budget.max_hosts, 8);
    assert_eq!(
        config.breaker.cancelled_call_outcome,
        CancelledCallOutcome::Failure
    );
    assert!((config.breaker.failure_ratio_threshold - 1.0).abs() < f64::EPSILON);
}

/// A list from the environment is written in brackets, as in TOML; a bare
/// comma-separated value is one string, which an error names.
#[test]
fn a_list_key_is_set_from_the_environment_in_brackets() {
    let config = load_env(&[(
        "TIMEBOX_HTTP__CLIENT__DEADLINE_HEADERS",
        "[x-timebox-deadline-ms, grpc-timeout]",
    )])
    .unwrap();
    assert_eq!(
        config.http.client.deadline_headers,
        ["x-timebox-deadline-ms", "grpc-timeout"]
    );

    let err = load_env(&[(
        "TIMEBOX_HTTP__CLIENT__DEADLINE_HEADERS",
        "x-timebox-deadline-ms,grpc-timeout",
    )])
    .unwrap_err();
    assert_eq!(keys(&err), ["http.client.deadline_headers"]);
}

#[test]
fn env_key_names_are_case_insensitive() {
    let config = load_env(&[("TIMEBOX_server__Shutdown_Timeout_Secs", "12")]).unwrap();
    assert_eq!(config.server.shutdown_timeout_secs, 12);
}

/// Two variables that name one key in different cases: which one won
/// would depend on the order of the environment, so neither does.
#[test]
fn two_env_names_of_one_key_are_an_error_naming_both() {
    let upper = ("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "5");
    let lower = ("TIMEBOX_server__shutdown_timeout_secs", "50");
    for vars in [[upper, lower], [lower, upper]] {
        let err = load_env(&vars).unwrap_err();
        assert_eq!(keys(&err), ["server.shutdown_timeout_secs"]);
        let message = err.to_string();
        assert!(
            message.contains(upper.0) && message.contains(lower.0),
            "{message}"
        );
    }
}

/// One variable given twice (the environment, then `env_vars` over it) is
/// one name: the later value wins.
#[test]
fn one_env_name_given_twice_takes_the_later_value() {
    let config = load_env(&[
        ("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "5"),
        ("TIMEBOX_SERVER__SHUTDOWN_TIMEOUT_SECS", "50"),
    ])
    .unwrap();
    assert_eq!(config.server.shutdown_timeout_secs, 50);
}

#[test]
fn timebox_variables_without_a_double_underscore_are_not_keys() {
    let config = load_env(&[
        ("TIMEBOX_SIM_SEED", "0x2a"),
        ("TIMEBOX_SIM_LIVENESS_SECS", "30"),
        ("TIMEBOX_ANYTHING", "else"),
        ("OTHER__SERVER__SHUTDOWN_TIMEOUT_SECS", "1"),
    ])
    .unwrap();
    assert_eq!(config, Config::default());
}

/// A section and its key joined by one underscore, where two were meant,
/// set nothing: an error names the variable rather than leave the default
/// in place unsaid.
#[test]
fn a_variable_that_joins_a_section_to_its_key_with_one_underscore_is_an_error_naming_it() {
    for name in [
        "TIMEBOX_SERVER_SHUTDOWN_TIMEOUT_SECS",
        "TIMEBOX_Stream_Heartbeat_Secs",
    ] {
        let err = load_env(&[(name, "60")]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&format!("`{name}` sets no key")), "{text}");
        assert!(text.contains("__<KEY>`"), "{text}");
    }
}

/// What Kubernetes sets in every pod for a Service named `timebox-server`
/// or `timebox-stream` (service links, on by default) is not a misjoined
/// key: a pod starts with them.
#[test]
fn kubernetes_service_link_variables_are_not_keys() {
    let config = load_env(&[
        ("TIMEBOX_SERVER_SERVICE_HOST", "10.0.0.7"),
        ("TIMEBOX_SERVER_SERVICE_PORT", "80"),
        ("TIMEBOX_SERVER_SERVICE_PORT_HTTP", "80"),
        ("TIMEBOX_SERVER_PORT", "tcp://10.0.0.7:80"),
        ("TIMEBOX_SERVER_PORT_80_TCP", "tcp://10.0.0.7:80"),
        ("TIMEBOX_SERVER_PORT_80_TCP_PROTO", "tcp"),
        ("TIMEBOX_SERVER_PORT_80_TCP_PORT", "80"),
        ("TIMEBOX_STREAM_PORT_9000_UDP_ADDR", "10.0.0.8"),
    ])
    .unwrap();
    assert_eq!(config, Config::default());
}

#[test]
fn a_missing_file_loads_the_defaults() {
    let dir = TempDir::new("missing_file");
    let config = Loader::new()
        .toml_file(dir.path().join("timebox.toml"))
        .load()
        .unwrap();
    assert_eq!(config, Config::default());
}

#[test]
fn a_file_is_read_from_its_path() {
    let dir = TempDir::new("file_read");
    let file = dir.write(
        "timebox.toml",
        r#"
        [server.timeouts]
        request_timeout_ms = 5000
        accept_deadline_header = true

        [breaker]
        cancelled_call_outcome = "failure"
        "#,
    );
    let config = Loader::new().toml_file(file).load().unwrap();
    assert_eq!(
        config.server.timeouts.request_timeout(),
        Some(Duration::from_secs(5))
    );
    assert!(config.server.timeouts.accept_deadline_header);
    assert_eq!(
        config.breaker.cancelled_call_outcome,
        CancelledCallOutcome::Failure
    );
}

#[test]
fn the_file_timebox_config_names_comes_after_the_other_toml_and_before_the_environment() {
    let dir = TempDir::new("config_env_file");
    let file = dir.write(
        "mounted.toml",
        "[server]\nshutdown_timeout_secs = 50\nprestop_grace_secs = 3\n",
    );
    let path = file.display().to_string();
    let config = Loader::new()
        .toml_str(
            "[server]\nshutdown_timeout_secs = 40\n[server.timeouts]\nrequest_timeout_ms = 5000",
        )
        .env_vars([
            ("TIMEBOX_CONFIG", path.as_str()),
            ("TIMEBOX_SERVER__PRESTOP_GRACE_SECS", "2"),
        ])
        .load()
        .unwrap();
    assert_eq!(
        config.server.shutdown_timeout_secs, 50,
        "the file beats earlier TOML"
    );
    assert_eq!(
        config.server.timeouts.request_timeout_ms,
        Some(5000),
        "what it leaves stays"
    );
    assert_eq!(
        config.server.prestop_grace_secs, 2,
        "the environment beats the file"
    );
}

#[test]
fn a_missing_file_timebox_config_names_is_an_error_naming_the_variable_and_the_path() {
    let dir = TempDir::new("config_env_missing");
    let path = dir.path().join("mistyped.toml").display().to_string();
    let err = load_env(&[("TIMEBOX_CONFIG", path.as_str())]).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("`TIMEBOX_CONFIG`"), "{message}");
    assert!(message.contains(&format!("`{path}`")), "{message}");
}

#[test]
fn an_empty_timebox_config_names_no_file() {
    for empty in ["", "  "] {
        assert_eq!(
            load_env(&[("TIMEBOX_CONFIG", empty)]).unwrap(),
            Config::default()
        );
    }
}

#[test]
fn the_last_timebox_config_pair_wins() {
    let dir = TempDir::new("config_env_last");
    let file = dir.write("mounted.toml", "[server]\nshutdown_timeout_secs = 50\n");
    let missing = dir.path().join("missing.toml").display().to_string();
    let path = file.display().to_string();
    let config = load_env(&[
        ("TIMEBOX_CONFIG", missing.as_str()),
        ("TIMEBOX_CONFIG", path.as_str()),
    ])
    .unwrap();
    assert_eq!(config.server.shutdown_timeout_secs, 50);
}

#[test]
fn an_unknown_key_in_the_file_timebox_config_names_names_the_key_and_the_file() {
    let dir = TempDir::new("config_env_unknown_key");
    let file = dir.write("mounted.toml", "[server]\nshutdown_timeout = 5\n");
    let path = file.display().to_string();
    let err = load_env(&[("TIMEBOX_CONFIG", path.as_str())]).unwrap_err();
    assert_eq!(keys(&err), ["server.shutdown_timeout"]);
    assert!(err.to_string().contains(&path), "{err}");
}

#[test]
fn an_unknown_key_in_the_file_is_an_error_naming_the_key_and_the_file() {
    let dir = TempDir::new("unknown_key_file");
    let file = dir.write(
        "timebox.toml",
        "[http.client.retry_budget]\ntransient_costs = 3\n",
    );
    let err = Loader::new().toml_file(&file).load().unwrap_err();
    assert_eq!(keys(&err), ["http.client.retry_budget.transient_costs"]);
    let message = err.to_string();
    assert!(
        message.starts_with("unknown key `http.client.retry_budget.transient_costs`"),
        "{message}"
    );
    assert!(message.contains(&file.display().to_string()), "{message}");
    // The valid keys are listed, so the typo is easy to fix.
    assert!(message.contains("`transient_cost`"), "{message}");
}

#[test]
fn an_unknown_section_is_an_error_naming_it() {
    let err = Config::from_toml_str("[servr]\nshutdown_timeout_secs = 3").unwrap_err();
    assert_eq!(keys(&err), ["servr"]);
    assert!(err.to_string().contains("unknown key `servr`"), "{err}");
}

#[test]
fn an_unknown_key_in_the_environment_is_an_error_naming_the_key_and_the_variable() {
    let err = load_env(&[("TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT", "5")]).unwrap_err();
    assert_eq!(keys(&err), ["server.timeouts.request_timeout"]);
    let message = err.to_string();
    assert!(
        message.contains("environment variable `TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT`"),
        "{message}"
    );
    assert!(message.contains("`request_timeout_ms`"), "{message}");
}

#[test]
fn an_unknown_key_in_the_environment_is_blamed_on_the_environment_not_the_file() {
    let err = Loader::new()
        .toml_str("[server]\nshutdown_timeout_secs = 40")
        .env_vars([("TIMEBOX_SERVER__BOGUS", "1")])
        .load()
        .unwrap_err();
    assert_eq!(keys(&err), ["server.bogus"]);
    let message = err.to_string();
    assert!(
        message.contains("environment variable `TIMEBOX_SERVER__BOGUS`"),
        "{message}"
    );
}

#[test]
fn an_empty_level_in_an_env_name_is_an_error_naming_the_variable() {
    let err = load_env(&[("TIMEBOX_SERVER____SHUTDOWN_TIMEOUT_SECS", "5")]).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("`TIMEBOX_SERVER____SHUTDOWN_TIMEOUT_SECS`"),
        "{message}"
    );
}

#[test]
fn a_wrong_type_in_the_file_names_the_key_and_the_expected_type() {
    let err = Config::from_toml_str("[http.client.retry_budget]\ncapacity = \"lots\"").unwrap_err();
    assert_eq!(keys(&err), ["http.client.retry_budget.capacity"]);
    let message = err.to_string();
    assert!(
        message.starts_with("`http.client.retry_budget.capacity`"),
        "{message}"
    );
    assert!(message.contains("non-negative integer"), "{message}");
    assert!(message.contains("lots"), "{message}");
}

#[test]
fn a_negative_number_names_the_key_and_the_expected_type() {
    let err = Config::from_toml_str("[server]\nshutdown_timeout_secs = -1").unwrap_err();
    assert_eq!(keys(&err), ["server.shutdown_timeout_secs"]);
    assert!(err.to_string().contains("non-negative integer"), "{err}");
}

#[test]
fn a_wrong_type_in_the_environment_names_the_key_the_type_and_the_variable() {
    let err = load_env(&[("TIMEBOX_SERVER__TIMEOUTS__ACCEPT_DEADLINE_HEADER", "yes")]).unwrap_err();
    assert_eq!(keys(&err), ["server.timeouts.accept_deadline_header"]);
    let message = err.to_string();
    assert!(message.contains("a boolean"), "{message}");
    assert!(
        message.contains("environment variable `TIMEBOX_SERVER__TIMEOUTS__ACCEPT_DEADLINE_HEADER`"),
        "{message}"
    );
}

#[test]
fn a_wrong_type_for_an_optional_key_names_the_key_and_the_expected_type() {
    let err = load_env(&[("TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT_MS", "soon")]).unwrap_err();
    assert_eq!(keys(&err), ["server.timeouts.request_timeout_ms"]);
    assert!(err.to_string().contains("non-negative integer"), "{err}");
}

/// A gRPC method's name holds `.` and `/`: the key is quoted, as TOML
/// writes it and as validation names it.
#[test]
fn a_grpc_methods_key_is_named_quoted() {
    let key = "server.grpc.methods.\"/fleet.Relay/Forward\"";
    let err = Config::from_toml_str("[server.grpc.methods]\n\"/fleet.Relay/Forward\" = \"never\"")
        .unwrap_err();
    assert_eq!(keys(&err), [key]);
    assert!(err.to_string().contains("in TOML string"), "{err}");

    let variable = "TIMEBOX_SERVER__GRPC__METHODS__/fleet.Relay/Forward";
    let err = load_env(&[(variable, "never")]).unwrap_err();
    assert_eq!(keys(&err), [key]);
    let message = err.to_string();
    assert!(
        message.contains(&format!("environment variable `{variable}`")),
        "{message}"
    );
}

#[test]
fn a_section_given_a_value_names_the_section() {
    let err = Config::from_toml_str("stream = 5").unwrap_err();
    assert_eq!(keys(&err), ["stream"]);
    assert!(err.to_string().contains("a table"), "{err}");
}

#[test]
fn an_unknown_cancelled_call_outcome_lists_the_valid_ones() {
    let err = Config::from_toml_str("[breaker]\ncancelled_call_outcome = \"ignore\"").unwrap_err();
    assert_eq!(keys(&err), ["breaker.cancelled_call_outcome"]);
    let message = err.to_string();
    assert!(message.contains("`slow`, `failure`"), "{message}");
    assert!(message.contains("ignore"), "{message}");
}

#[test]
fn invalid_toml_is_an_error_naming_the_file_and_the_line() {
    let dir = TempDir::new("invalid_toml");
    let file = dir.write("timebox.toml", "[server]\nshutdown_timeout_secs = = 3\n");
    let err = Loader::new().toml_file(&file).load().unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("invalid TOML in file"), "{message}");
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn a_zero_transient_cost_is_a_validation_error_naming_the_key() {
    let config = Config::from_toml_str("[http.client.retry_budget]\ntransient_cost = 0").unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(keys(&err), ["http.client.retry_budget.transient_cost"]);
    assert!(
        err.to_string()
            .contains("`http.client.retry_budget.transient_cost`"),
        "{err}"
    );
}

#[test]
fn a_retry_ratio_above_one_is_a_validation_error_naming_the_key() {
    let config = Config::from_toml_str("[http.client.retry_budget]\nretry_ratio = 1.5").unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(keys(&err), ["http.client.retry_budget.retry_ratio"]);
    assert!(err.to_string().contains("1.5"), "{err}");
}

#[test]
fn a_nan_or_negative_retry_ratio_is_a_validation_error() {
    for ratio in ["nan", "-0.1"] {
        let toml = format!("[http.client.retry_budget]\nretry_ratio = {ratio}");
        let err = Config::from_toml_str(&toml)
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(
            keys(&err),
            ["http.client.retry_budget.retry_ratio"],
            "{ratio}"
        );
    }
}

#[test]
fn the_retry_ratio_bounds_are_valid() {
    for ratio in [0.0, 1.0] {
        let mut config = Config::default();
        config.http.client.retry_budget.retry_ratio = ratio;
        assert!(config.validate().is_ok(), "{ratio}");
    }
}

#[test]
fn validation_reports_every_bad_budget_value_at_once() {
    let config = Config::from_toml_str(
        "[http.client.retry_budget]\ncapacity = 0\ntransient_cost = 0\nthrottling_cost = 0\nretry_ratio = 2.0",
    )
    .unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(
        keys(&err),
        [
            "http.client.retry_budget.capacity",
            "http.client.retry_budget.transient_cost",
            "http.client.retry_budget.throttling_cost",
            "http.client.retry_budget.retry_ratio",
        ]
    );
    assert!(
        err.to_string().starts_with("4 configuration problems: "),
        "{err}"
    );
}

#[test]
fn a_disabled_budget_is_not_checked() {
    let config = Config::from_toml_str(
        "[http.client.retry_budget]\nenabled = false\ncapacity = 0\ntransient_cost = 0\nthrottling_cost = 0\nretry_ratio = 1.5",
    )
    .unwrap();
    assert!(config.validate().is_ok());
}

#[test]
fn breaker_values_that_cannot_count_are_validation_errors_naming_the_key() {
    let cases = [
        ("window_secs = 0", "breaker.window_secs"),
        ("window_buckets = 0", "breaker.window_buckets"),
        ("window_buckets = 3", "breaker.window_buckets"),
        (
            "window_secs = 2000\nwindow_buckets = 2000000",
            "breaker.window_buckets",
        ),
        ("minimum_sample_count = 0", "breaker.minimum_sample_count"),
        ("open_secs = 0", "breaker.open_secs"),
        ("open_secs = 86401", "breaker.open_secs"),
        ("window_secs = 86401", "breaker.window_secs"),
        // Far past a day: the window's own key is named (its length in ms
        // once saturated, and then the buckets' key was named instead).
        ("window_secs = 9223372036854775807", "breaker.window_secs"),
        ("half_open_trials = 0", "breaker.half_open_trials"),
        (
            "failure_ratio_threshold = 0.0",
            "breaker.failure_ratio_threshold",
        ),
        (
            "failure_ratio_threshold = 1.5",
            "breaker.failure_ratio_threshold",
        ),
        (
            "slow_call_rate_threshold = nan",
            "breaker.slow_call_rate_threshold",
        ),
    ];
    for (line, key) in cases {
        let config = Config::from_toml_str(&format!("[breaker]\n{line}")).unwrap();
        let err = config.validate().unwrap_err();
        assert_eq!(keys(&err), [key], "{line}");
    }
}

#[test]
fn a_zero_slow_call_threshold_is_valid_and_means_off() {
    let config = Config::from_toml_str("[breaker]\nslow_call_duration_threshold_secs = 0").unwrap();
    assert!(config.validate().is_ok());
    assert_eq!(config.breaker.slow_call_duration_threshold(), None);
}

#[test]
fn a_shutdown_shorter_than_the_request_deadline_plus_five_seconds_warns() {
    let mut config = Config::default();
    config.server.timeouts.request_timeout_ms = Some(30_000);
    config.server.shutdown_timeout_secs = 30;
    let warnings = config.validate().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key(), "server.shutdown_timeout_secs");
    let message = warnings[0].to_string();
    assert!(message.contains("30000 ms"), "{message}");
    assert!(message.contains("at least 35"), "{message}");

    config.server.shutdown_timeout_secs = 35;
    assert_eq!(config.validate().unwrap(), []);
}

/// `warnings` is the shutdown grace's one warning, naming `deadline`.
fn assert_the_shutdown_warning(warnings: &[Warning], deadline: &str) {
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].key(), "server.shutdown_timeout_secs");
    assert!(
        warnings[0].to_string().contains(deadline),
        "{}",
        warnings[0]
    );
}

#[test]
fn a_route_override_counts_toward_the_shutdown_warning() {
    let config = Config::preset(Profile::Prod); // 30 s deadline, 35 s shutdown
    let longest = Some(Duration::from_secs(120));
    let warnings = config.validate_with_route_deadline(longest).unwrap();
    assert_the_shutdown_warning(&warnings, "120000 ms");

    let shorter = Some(Duration::from_secs(10));
    assert_eq!(config.validate_with_route_deadline(shorter).unwrap(), []);
}

/// gRPC calls count in flight at shutdown too: their deadlines count
/// toward the warning, the server's default and each method's.
#[test]
fn a_grpc_deadline_counts_toward_the_shutdown_warning() {
    let mut config = Config::default();
    config.server.shutdown_timeout_secs = 30;
    config.server.grpc.default_timeout_ms = Some(120_000);
    assert_the_shutdown_warning(&config.validate().unwrap(), "120000 ms");

    config.server.grpc.default_timeout_ms = None;
    config.server.grpc.methods.insert(
        "/fleet.Relay/Wait".to_owned(),
        MethodTimeout::Millis(60_000),
    );
    assert_the_shutdown_warning(&config.validate().unwrap(), "60000 ms");

    config.server.shutdown_timeout_secs = 65;
    assert_eq!(config.validate().unwrap(), []);
}

/// A gRPC method's name is matched as the call's path says it: set from
/// the environment, it keeps its case, where the field names are read in
/// any case.
#[test]
fn a_grpc_method_set_from_the_environment_keeps_its_case() {
    let config = Loader::new()
        .env_vars([(
            "TIMEBOX_SERVER__GRPC__METHODS__/fleet.Relay/Forward",
            "1500",
        )])
        .load()
        .unwrap();
    assert_eq!(
        config.server.grpc.methods.get("/fleet.Relay/Forward"),
        Some(&MethodTimeout::Millis(1500))
    );
}

#[test]
fn no_request_deadline_means_no_shutdown_warning() {
    let mut config = Config::default();
    config.server.shutdown_timeout_secs = 0;
    assert_eq!(config.validate().unwrap(), []);
}

#[test]
fn an_inactivity_window_shorter_than_a_tool_call_warns() {
    let mut config = Config::default();
    config.stream.stream_inactivity_timeout_secs = 20;
    let warnings = config.validate().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key(), "stream.stream_inactivity_timeout_secs");

    config.stream.stream_inactivity_timeout_secs = 30;
    assert_eq!(config.validate().unwrap(), []);
}

/// A cost the bucket cannot hold turns that retry or hedge off for good:
/// allowed, and said.
#[test]
fn a_cost_above_the_buckets_capacity_warns_naming_the_cost() {
    let mut config = Config::default();
    config.http.client.retry_budget.capacity = 10;
    let warnings = config.validate().unwrap();
    let warned: Vec<&str> = warnings.iter().map(Warning::key).collect();
    assert_eq!(warned, ["http.client.retry_budget.transient_cost"]);
    let message = warnings[0].to_string();
    assert!(message.contains("is 14"), "{message}");
    assert!(
        message.contains("`http.client.retry_budget.capacity` = 10"),
        "{message}"
    );

    config.http.client.retry_budget.capacity = 4;
    let warnings = config.validate().unwrap();
    let warned: Vec<&str> = warnings.iter().map(Warning::key).collect();
    assert_eq!(
        warned,
        [
            "http.client.retry_budget.transient_cost",
            "http.client.retry_budget.throttling_cost",
            "http.client.hedge.hedge_cost",
        ]
    );

    // A cost the bucket holds exactly can be paid.
    config.http.client.retry_budget.capacity = 5;
    let warnings = config.validate().unwrap();
    let warned: Vec<&str> = warnings.iter().map(Warning::key).collect();
    assert_eq!(warned, ["http.client.retry_budget.transient_cost"]);

    config.http.client.retry_budget.enabled = false;
    assert_eq!(config.validate().unwrap(), [], "no bucket, no cost");
}

#[test]
fn an_empty_list_of_deadline_headers_to_read_or_send_warns() {
    let mut config = Config::default();
    config.http.client.deadline_headers.clear();
    let warnings = config.validate().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key(), "http.client.deadline_headers");
    assert!(
        warnings[0]
            .to_string()
            .contains("no HTTP call sends a deadline header"),
        "{}",
        warnings[0]
    );
    config.http.client.send_deadline_header = false;
    assert_eq!(config.validate().unwrap(), []);

    config.server.timeouts.deadline_headers.clear();
    assert_eq!(
        config.validate().unwrap(),
        [],
        "`accept_deadline_header` is off by default"
    );
    config.server.timeouts.accept_deadline_header = true;
    let warnings = config.validate().unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key(), "server.timeouts.deadline_headers");
}

#[test]
fn config_sections_compose_with_struct_update_syntax() {
    let config = Config {
        breaker: BreakerConfig {
            open_secs: 5,
            ..BreakerConfig::default()
        },
        ..Config::default()
    };
    // It compiles (the sections are not `#[non_exhaustive]`), and the
    // fields not named keep their defaults.
    assert_eq!(config.breaker.half_open_trials, 3);
}

// §11: the connection bounds and the breaker switch.

#[test]
fn the_connection_bounds_load_from_the_environment_and_zero_turns_them_off() {
    let config = load_env(&[
        ("TIMEBOX_SERVER__HEADER_READ_TIMEOUT_MS", "0"),
        ("TIMEBOX_SERVER__KEEP_ALIVE_TIMEOUT_SECS", "0"),
    ])
    .unwrap();
    assert_eq!(config.server.header_read_timeout(), None);
    assert_eq!(config.server.keep_alive_timeout(), None);
    assert!(config.validate().is_ok());
}

/// `server.max_connection_age_secs`: none by default, set from a file or
/// the environment, and `0` turns it off again.
#[test]
fn the_connection_age_is_off_by_default_and_zero_turns_it_off() {
    let server = Config::default().server;
    assert_eq!(server.max_connection_age_secs, 0);
    assert_eq!(server.max_connection_age(), None);
    let from_the_file = Loader::new()
        .toml_str("[server]\nmax_connection_age_secs = 600")
        .load()
        .unwrap();
    assert_eq!(
        from_the_file.server.max_connection_age(),
        Some(Duration::from_secs(600))
    );
    let off_again = Loader::new()
        .toml_str("[server]\nmax_connection_age_secs = 600")
        .env_vars([("TIMEBOX_SERVER__MAX_CONNECTION_AGE_SECS", "0")])
        .load()
        .unwrap();
    assert_eq!(off_again.server.max_connection_age(), None);
    assert!(off_again.validate().is_ok());
}

#[test]
fn connection_bounds_longer_than_a_day_are_validation_errors_naming_the_key() {
    let config = Config::from_toml_str(
        "[server]\nheader_read_timeout_ms = 86400001\nkeep_alive_timeout_secs = 86401\n\
         max_connection_age_secs = 86401",
    )
    .unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(
        keys(&err),
        [
            "server.header_read_timeout_ms",
            "server.keep_alive_timeout_secs",
            "server.max_connection_age_secs"
        ]
    );
    assert!(err.to_string().contains("set it to 0"), "{err}");
    assert!(
        err.to_string().contains(
            "`server.max_connection_age_secs` must be at most one day; \
             set it to 0 to turn the bound off"
        ),
        "{err}"
    );
}

#[test]
fn shutdown_waits_longer_than_a_day_are_validation_errors_naming_the_key() {
    let config = Config::from_toml_str(
        "[server]\nshutdown_timeout_secs = 9223372036854775807\n\
         prestop_grace_secs = 86401\ndrain_force_secs = 86401",
    )
    .unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(
        keys(&err),
        [
            "server.shutdown_timeout_secs",
            "server.prestop_grace_secs",
            "server.drain_force_secs"
        ]
    );
    let config = Config::from_toml_str("[server]\nshutdown_timeout_secs = 86400").unwrap();
    assert!(config.validate().is_ok());
}

#[test]
fn a_heartbeat_longer_than_a_day_is_a_validation_error_naming_the_key() {
    let config = Config::from_toml_str("[stream]\nheartbeat_secs = 9223372036854775807").unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(keys(&err), ["stream.heartbeat_secs"]);
    assert!(err.to_string().contains("set it to 0"), "{err}");
    let config = Config::from_toml_str("[stream]\nheartbeat_secs = 86400").unwrap();
    assert!(config.validate().is_ok());
}

#[test]
fn no_hosts_at_all_is_a_validation_error_even_with_the_budget_off() {
    for budget in ["enabled = true", "enabled = false"] {
        let config = Config::from_toml_str(&format!(
            "[http.client.retry_budget]\n{budget}\nmax_hosts = 0"
        ))
        .unwrap();
        let err = config.validate().unwrap_err();
        assert_eq!(
            keys(&err),
            ["http.client.retry_budget.max_hosts"],
            "{budget}"
        );
    }
}

#[test]
fn a_disabled_breaker_is_not_validated() {
    let config = Config::from_toml_str("[breaker]\nenabled = false\nwindow_secs = 0").unwrap();
    assert!(config.validate().is_ok());
    let config = Config::from_toml_str("[breaker]\nwindow_secs = 0").unwrap();
    assert_eq!(
        keys(&config.validate().unwrap_err()),
        ["breaker.window_secs"]
    );
}

#[test]
fn admission_and_hedging_defaults_equal_the_design() {
    let admission = &Config::default().server.admission;
    assert_eq!(admission.deadline_check, DeadlineCheck::Dark);
    assert!((admission.max_reject_fraction - 0.2).abs() < f64::EPSILON);
    assert_eq!(admission.concurrency, Concurrency::Off);
    assert_eq!(admission.queue.target_ms, 5);
    assert_eq!(admission.queue.interval_ms, 100);
    let hedge = &Config::default().http.client.hedge;
    assert!(!hedge.enabled);
    assert_eq!(hedge.delay_ms, None);
    assert_eq!(hedge.hedge_cost, 5);
    assert!((hedge.max_extra_load - 0.05).abs() < f64::EPSILON);
}

#[test]
fn admission_and_hedging_load_from_toml_and_the_environment() {
    let config = Config::from_toml_str(
        "[server.admission]\ndeadline_check = \"enforce\"\nconcurrency = \"fixed:64\"\n\
         [server.admission.queue]\ntarget_ms = 10\n\
         [http.client.hedge]\nenabled = true\ndelay_ms = 25",
    )
    .unwrap();
    assert_eq!(
        config.server.admission.deadline_check,
        DeadlineCheck::Enforce
    );
    assert_eq!(
        config.server.admission.concurrency,
        Concurrency::Fixed(std::num::NonZeroUsize::new(64).unwrap())
    );
    assert_eq!(config.server.admission.queue.target_ms, 10);
    assert_eq!(config.http.client.hedge.delay_ms, Some(25));
    let config = load_env(&[("TIMEBOX_SERVER__ADMISSION__CONCURRENCY", "gradient2")]).unwrap();
    assert_eq!(config.server.admission.concurrency, Concurrency::Gradient2);
}

#[test]
fn a_concurrency_of_no_known_form_is_an_error_naming_the_key() {
    for value in [
        "fixed:0", "fixed:+5", "fixed: 5", "fixed:", "fixed:-1", "Fixed:5",
    ] {
        let toml = format!("[server.admission]\nconcurrency = \"{value}\"");
        let err = Config::from_toml_str(&toml).unwrap_err();
        assert_eq!(keys(&err), ["server.admission.concurrency"], "{value}");
        let message = err.to_string();
        assert!(
            message.contains("\"fixed:N\" with N at least 1"),
            "{message}"
        );
    }
    let err = Config::from_toml_str("[server.admission]\ndeadline_check = \"on\"").unwrap_err();
    assert_eq!(keys(&err), ["server.admission.deadline_check"]);
}

#[test]
fn an_attempt_timeout_of_zero_is_refused_by_key() {
    let config = Config::from_toml_str("[http.client]\ntimeout_secs = 0").unwrap();
    let err = config.validate().unwrap_err();
    assert_eq!(keys(&err), ["http.client.timeout_secs"]);
    assert!(err.to_string().contains("at least 1"), "{err}");
}

#[test]
fn admission_and_hedging_values_out_of_range_are_refused_by_key() {
    let mut config = Config::default();
    config.server.admission.max_reject_fraction = 1.5;
    config.server.admission.queue.target_ms = 200;
    config.http.client.hedge.max_extra_load = -0.1;
    config.http.client.hedge.hedge_cost = 0;
    config.http.client.hedge.delay_ms = Some(0);
    // Hedging off, its values judged all the same: `RequestBuilder::hedge()`
    // hedges one request with them either way.
    assert!(!config.http.client.hedge.enabled);
    let err = config.validate().unwrap_err();
    assert_eq!(
        keys(&err),
        [
            "server.admission.max_reject_fraction",
            "server.admission.queue.target_ms",
            "http.client.hedge.delay_ms",
            "http.client.hedge.hedge_cost",
            "http.client.hedge.max_extra_load"
        ]
    );
    config.server.admission.queue.interval_ms = 0;
    let err = config.validate().unwrap_err();
    assert!(keys(&err).contains(&"server.admission.queue.interval_ms"));
}

/// Two variables that make one key a value and a table at once are an
/// error naming both, in whichever order the environment lists them.
#[test]
fn variables_that_make_a_key_a_value_and_a_table_are_an_error_naming_both() {
    let shallow = ("TIMEBOX_HTTP__CLIENT", "fast");
    let deep = ("TIMEBOX_HTTP__CLIENT__TIMEOUT_SECS", "10");
    for vars in [[shallow, deep], [deep, shallow]] {
        let err = load_env(&vars).unwrap_err();
        assert_eq!(keys(&err), ["http.client"], "{vars:?}");
        let message = err.to_string();
        assert!(
            message.contains("`TIMEBOX_HTTP__CLIENT`")
                && message.contains("`TIMEBOX_HTTP__CLIENT__TIMEOUT_SECS`"),
            "{message}"
        );
    }
}

/// A2: without a deadline a queued request waits until CoDel's interval,
/// so the interval is a bound: at most a day, as every other wait.
#[test]
fn a_queue_interval_longer_than_a_day_is_an_error_naming_it() {
    let mut config = Config::default();
    config.server.admission.queue.interval_ms = 86_400_001;
    let err = config.validate().unwrap_err();
    assert_eq!(keys(&err), ["server.admission.queue.interval_ms"]);
    assert!(err.to_string().contains("at most one day"), "{err}");
    config.server.admission.queue.interval_ms = 86_400_000;
    config.validate().expect("a day is a bound");
}

/// An application's own section, read from the same sources as the
/// `Config` beside it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct AppSection {
    name: String,
    workers: u32,
}

#[test]
fn an_application_section_is_read_beside_the_config_and_not_an_unknown_key() {
    let loader = Loader::new()
        .toml_str("[server]\nshutdown_timeout_secs = 40\n[app]\nname = \"toml\"\nworkers = 2")
        .env_vars([("TIMEBOX_APP__WORKERS", "8")]);
    let (config, app) = loader.load_with::<AppSection>("app").unwrap();
    assert_eq!(config.server.shutdown_timeout_secs, 40);
    assert_eq!((app.name.as_str(), app.workers), ("toml", 8));
    // Without the section, the same document is an unknown key.
    let err = loader.load().unwrap_err();
    assert_eq!(keys(&err), ["app"]);
    // No source has it: the section's defaults.
    let (_, app) = Loader::new().load_with::<AppSection>("app").unwrap();
    assert_eq!(app.workers, 0);
}

/// A section whose name has capitals is reached by its variables as
/// timebox's own tables are: environment names are read in any case.
#[test]
fn an_application_section_with_capitals_is_reached_from_the_environment() {
    let (_, app) = Loader::new()
        .toml_str("[App]\nname = \"toml\"")
        .env_vars([("TIMEBOX_APP__WORKERS", "8")])
        .load_with::<AppSection>("App")
        .unwrap();
    assert_eq!((app.name.as_str(), app.workers), ("toml", 8));
}

/// An application's section named like one of timebox's own tables would
/// take that table out of every source, the profile's included, and leave
/// the `Config` its defaults without a word.
#[test]
fn an_application_section_named_like_a_timebox_table_is_an_error_that_names_it() {
    for section in ["server", "stream", "http", "breaker", "Server"] {
        let err = Loader::new()
            .profile(Profile::Prod)
            .toml_str("[server]\nshutdown_timeout_secs = 40")
            .load_with::<AppSection>(section)
            .unwrap_err();
        assert_eq!(keys(&err), [section]);
        let text = err.to_string();
        assert!(text.contains("timebox's own"), "{text}");
        assert!(text.contains("section of another name"), "{text}");
    }
}

#[test]
fn errors_in_an_application_section_name_the_key_and_its_source_with_the_config_errors() {
    let err = Loader::new()
        .toml_str("[server]\nshutdown_timeout_secs = \"long\"")
        .env_vars([("TIMEBOX_APP__WORKRES", "8")])
        .load_with::<AppSection>("app")
        .unwrap_err();
    assert_eq!(keys(&err), ["server.shutdown_timeout_secs", "app.workres"]);
    let text = err.to_string();
    assert!(
        text.contains("environment variable `TIMEBOX_APP__WORKRES`"),
        "{text}"
    );
    assert!(text.contains("`name`, `workers`"), "{text}");
}
