//! The worker (and the hiccup meter) die with the process that started them.

/// Ask the kernel to kill this process when its parent dies (and exit now if it already
/// has); the parent's pid, for the idle loop's own check.
pub fn die_with_parent() -> u32 {
    let parent = std::os::unix::process::parent_id();
    // SAFETY: asks the kernel to kill us when the parent dies; a plain prctl.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if std::os::unix::process::parent_id() != parent {
        std::process::exit(3);
    }
    parent
}
