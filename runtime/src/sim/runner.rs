//! What `#[sim_test]` expands to: runs a test body once per seed on a paused
//! runtime, bounds it in virtual time, and prints the replay line on failure.

use std::fmt::Debug;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use super::Sim;

const SEED_VAR: &str = "TIMEBOX_SIM_SEED";
const LIVENESS_VAR: &str = "TIMEBOX_SIM_LIVENESS_SECS";
const DEFAULT_LIVENESS: Duration = Duration::from_secs(86_400);

/// One `#[sim_test]` function, as the macro describes it.
#[derive(Debug, Clone, Copy)]
pub struct Test {
    /// The package the test is in (`CARGO_PKG_NAME` at the test's crate).
    pub package: &'static str,
    /// `module_path!()` of the test function, followed by `::` and its name.
    pub path: &'static str,
    /// The attribute's `seed = N`.
    pub seed: Option<u64>,
    /// The attribute's `seeds = N`.
    pub seeds: Option<u64>,
}

/// What a test body may return: `()` or a `Result` whose `Err` fails the test.
#[diagnostic::on_unimplemented(
    message = "a `#[sim_test]` returns `()` or `Result<(), E>` with `E: Debug`, not `{Self}`",
    label = "this test returns `{Self}`",
    note = "an `Err` fails the test, printed with `{{:?}}`, then its replay line"
)]
pub trait Outcome {
    /// `Err` with a description when the body reported a failure.
    ///
    /// # Errors
    ///
    /// The body's own error, formatted.
    fn into_result(self) -> Result<(), String>;
}

impl Outcome for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: Debug> Outcome for Result<(), E> {
    fn into_result(self) -> Result<(), String> {
        self.map_err(|err| format!("{err:?}"))
    }
}

/// Runs `body` once per seed of `test`.
///
/// # Panics
///
/// When a run fails, after printing its replay line; when an environment
/// variable it reads is malformed, naming it.
pub fn run<B, Fut>(test: Test, body: B)
where
    B: Fn(Sim) -> Fut,
    Fut: Future,
    Fut::Output: Outcome,
{
    let liveness = liveness_from_env();
    for seed in seeds(test) {
        // A failure the runner detects panics inside the guarded call too, so
        // every failure prints its message before the replay line.
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            if let Err(message) = run_one(seed, liveness, &body) {
                panic!("{message}");
            }
        }));
        if let Err(payload) = outcome {
            eprintln!("{}", replay_line(test, seed));
            panic::resume_unwind(payload);
        }
    }
}

fn run_one<B, Fut>(seed: u64, liveness: Duration, body: &B) -> Result<(), String>
where
    B: Fn(Sim) -> Fut,
    Fut: Future,
    Fut::Output: Outcome,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|err| format!("could not build the simulation runtime: {err}"))?;
    runtime.block_on(async {
        tokio::select! {
            biased;
            outcome = body(Sim::new(seed)) => outcome
                .into_result()
                .map_err(|err| format!("sim test returned an error: {err}")),
            () = tokio::time::sleep(liveness) => Err(format!(
                "sim test still running after {} s of virtual time ({LIVENESS_VAR}); \
                 it is probably waiting for something that never happens",
                liveness.as_secs()
            )),
        }
    })
}

/// The seeds one test runs with, in order.
fn seeds(test: Test) -> impl Iterator<Item = u64> {
    let (base, count) = match (test.seed, test.seeds) {
        (Some(seed), _) => (seed, 1),
        (None, seeds) => (seed_from_env(), seeds.unwrap_or(1)),
    };
    (0..count).map(move |i| base.wrapping_add(i))
}

/// The shell command that replays `seed` of `test`.
fn replay_line(test: Test, seed: u64) -> String {
    // `module_path!()` starts with the crate's name, which `cargo test`
    // filters do not include.
    let name = test
        .path
        .split_once("::")
        .map_or(test.path, |(_, rest)| rest);
    // `--exact`, or a test whose name begins with this one's runs too.
    format!(
        "TIMEBOX_SIM_SEED={seed:#x} cargo test -p {} {name} -- --exact",
        test.package
    )
}

fn seed_from_env() -> u64 {
    let Some(value) = env_var(SEED_VAR) else {
        return 0;
    };
    parse_seed(&value).unwrap_or_else(|| {
        panic!("{SEED_VAR} must be a decimal or 0x-prefixed hexadecimal u64, got {value:?}")
    })
}

fn liveness_from_env() -> Duration {
    let Some(value) = env_var(LIVENESS_VAR) else {
        return DEFAULT_LIVENESS;
    };
    match value.trim().parse::<u64>() {
        Ok(secs) if secs > 0 => Duration::from_secs(secs),
        _ => panic!("{LIVENESS_VAR} must be a whole number of seconds, at least 1, got {value:?}"),
    }
}

fn env_var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) => Some(value),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(value)) => {
            panic!("{name} must be valid UTF-8, got {value:?}")
        }
    }
}

fn parse_seed(value: &str) -> Option<u64> {
    let value = value.trim();
    match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(seed: Option<u64>, seeds: Option<u64>) -> Test {
        Test {
            package: "pkg",
            path: "crate_name::module::name",
            seed,
            seeds,
        }
    }

    #[test]
    fn seeds_parse_in_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Some(42));
        assert_eq!(parse_seed("0x2a"), Some(42));
        assert_eq!(parse_seed(" 0X2A "), Some(42));
        assert_eq!(parse_seed("forty-two"), None);
        assert_eq!(parse_seed("0x"), None);
        assert_eq!(parse_seed("-1"), None);
    }

    #[test]
    fn an_attribute_seed_runs_once() {
        assert_eq!(seeds(test(Some(9), None)).collect::<Vec<_>>(), [9]);
    }

    #[test]
    fn replay_line_names_package_test_and_hex_seed() {
        assert_eq!(
            replay_line(test(None, None), 42),
            "TIMEBOX_SIM_SEED=0x2a cargo test -p pkg module::name -- --exact"
        );
    }
}
