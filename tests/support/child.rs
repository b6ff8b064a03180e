//! Running one test of the current test binary as a child process, to see
//! what a failing test prints and how it exits.

use std::process::{Child, Command, Output};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// The outcome of one child run: its exit status and everything it printed.
#[derive(Debug)]
pub struct ChildRun {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Set in a fixture's child process, so the fixture knows it runs as one.
pub const FIXTURE_ENV: &str = "TIMEBOX_TEST_FIXTURE_CHILD";

/// The environment of an image without CA certificates, as reqwest reads
/// them on Linux: `SSL_CERT_FILE` and `SSL_CERT_DIR`, when set, are the
/// only places looked at, and these hold none.
pub const NO_CA_CERTIFICATES: [(&str, &str); 2] = [
    ("SSL_CERT_FILE", "/dev/null"),
    ("SSL_CERT_DIR", "/dev/null"),
];

/// Runs the test named `exact_name` (an `#[ignore]`d fixture) of this test
/// binary in a child process, with `env` and [`FIXTURE_ENV`] added to a
/// copy of the environment from which every `TIMEBOX_` variable was
/// removed.
pub fn run_fixture(exact_name: &str, env: &[(&str, &str)]) -> ChildRun {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let mut command = Command::new(exe);
    command.args([
        "--ignored",
        "--exact",
        exact_name,
        "--nocapture",
        "--test-threads=1",
    ]);
    without_timebox_env(&mut command)
        .envs(env.iter().copied())
        .env(FIXTURE_ENV, "1");
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().expect("the test binary runs as a child");
    ChildRun {
        success: status.success(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Removes from `command`'s environment every `TIMEBOX_` variable of the
/// test's own, so a child's configuration is only what the test sets.
pub fn without_timebox_env(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("TIMEBOX_") {
            command.env_remove(name);
        }
    }
    command
}

/// Waits at most `bound` for `child` to exit, and returns what it printed
/// on its pipes. A child still running then is killed, and the test fails
/// saying that `it_ran_on` (what the child should not have done).
pub fn output_within(child: Child, bound: Duration, it_ran_on: &str) -> Output {
    let pid = child.id();
    let (done, output) = mpsc::channel();
    // `wait_with_output` reads the pipes while it waits, on a thread of
    // its own, so the bound is a timed receive rather than a polling loop.
    thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(bound) {
        Ok(output) => output.expect("the child's output is read"),
        Err(_) => {
            // It may exit meanwhile: a failed kill is no news.
            #[cfg(unix)]
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            #[cfg(not(unix))]
            let _ = pid;
            panic!("still running after {bound:?}: {it_ran_on}");
        }
    }
}

/// A child process that is killed when the test drops it, pass or fail.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends SIGTERM to the process `pid`, as `kill -TERM` would.
#[cfg(unix)]
pub fn sigterm(pid: u32) {
    signal(pid, nix::sys::signal::Signal::SIGTERM);
}

/// Sends SIGINT to the process `pid`, as `kill -INT` would.
#[cfg(unix)]
pub fn sigint(pid: u32) {
    signal(pid, nix::sys::signal::Signal::SIGINT);
}

/// Sends SIGINT to every process of the group `pgid`, as Ctrl-C does to
/// the job a terminal runs.
#[cfg(unix)]
pub fn sigint_group(pgid: u32) {
    let pgid = i32::try_from(pgid).expect("a process group id fits a pid_t");
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap_or_else(|err| panic!("SIGINT is sent to the group: {err}"));
}

#[cfg(unix)]
fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    let pid = i32::try_from(pid).expect("a process id fits a pid_t");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
        .unwrap_or_else(|err| panic!("{signal} is sent: {err}"));
}
