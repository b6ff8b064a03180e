//! A Python virtual environment under `target/` with pinned packages from
//! PyPI: how the tests that meet an official Python client or server get
//! it on a fresh machine. Shared by the workspace's test crates with
//! `#[path]`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter of the virtual environment `name` under
/// `CARGO_TARGET_TMPDIR` (`target_tmp`), with `requirements` installed;
/// made with `$PYTHON` (default `python3`) when it is missing. Panics with
/// the command that failed, so a test without its real part fails and
/// says why.
pub(crate) fn venv_python(target_tmp: &Path, name: &str, requirements: &Path) -> PathBuf {
    let venv = target_tmp.join(name);
    let python = venv.join("bin").join("python");
    let installed = pip_install(&python, requirements)
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        run(Command::new(&system).args(["-m", "venv"]).arg(&venv));
        run(&mut pip_install(&python, requirements));
    }
    python
}

/// `python -m pip install -r requirements`, quietly.
fn pip_install(python: &Path, requirements: &Path) -> Command {
    let mut command = Command::new(python);
    command
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(requirements);
    command
}

fn run(command: &mut Command) {
    let status = command.status().unwrap_or_else(|err| {
        panic!("cannot run {command:?}: {err} (Python 3 with venv is needed)")
    });
    assert!(status.success(), "{command:?} failed: {status}");
}
