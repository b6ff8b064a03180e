//! The process's limit on open files, for tests that hold hundreds of
//! sockets at once.

/// Makes room for `needed` open files in this process, which all its tests
/// share: raises the soft limit to `needed` when it is lower (the common
/// soft limit is 1024, the hard one far higher). A test binary's callers
/// pass one `needed`, so tests that run at once cannot lower each other's
/// room.
///
/// # Panics
///
/// When the hard limit is below `needed`, saying how to raise it.
#[cfg(unix)]
pub fn make_room_for(needed: u32) {
    use nix::sys::resource::{getrlimit, rlim_t, setrlimit, Resource};

    let needed = rlim_t::from(needed);

    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("the open-file limit is read");
    assert!(
        hard >= needed,
        "this test holds about {needed} open files at once, over this process's hard limit \
         of {hard}: raise it (`ulimit -Hn {needed}` as root, or `LimitNOFILE=` for a systemd \
         unit) and run the tests again"
    );
    if soft < needed {
        setrlimit(Resource::RLIMIT_NOFILE, needed, hard).expect("the soft limit is raised");
    }
}

/// Nothing to raise where there is no `RLIMIT_NOFILE`.
#[cfg(not(unix))]
pub fn make_room_for(_needed: u32) {}
