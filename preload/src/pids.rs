//! The table that shows a replayed program its record's pids (the LD's side, which maps it
//! and fills it, is `ld/pids.rs`): one array from recorded pid to replay pid, one back,
//! indexed by pid, in a file every process of the session maps shared. Atomics only: a signal
//! handler may translate. Without a table (record, or no session) every pid passes unchanged.

use ddbx_wire::PID_SLOTS;
use libc::{c_int, pid_t};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// The table's address in this image (0: none; pids pass unchanged).
static TABLE: AtomicUsize = AtomicUsize::new(0);

/// Which way an array of the table maps.
#[derive(Clone, Copy)]
enum Way {
    /// From a recorded pid to this replay's.
    ToReal = 0,
    /// From a pid of this replay to the record's.
    ToRecorded = 1,
}

/// The entry of `pid` in the array `way`; `None` without a table or for a pid out of range.
fn entry(way: Way, pid: pid_t) -> Option<&'static AtomicI32> {
    let base = TABLE.load(Ordering::Acquire);
    if base == 0 || pid <= 0 || pid as usize >= PID_SLOTS {
        return None;
    }
    let at = base + (way as usize * PID_SLOTS + pid as usize) * 4;
    // SAFETY: within the mapping of 2 × PID_SLOTS i32s, which stays mapped for the image's
    // life; entries are atomics only.
    Some(unsafe { &*(at as *const AtomicI32) })
}

fn look_up(way: Way, pid: pid_t) -> pid_t {
    match entry(way, pid).map(|e| e.load(Ordering::Acquire)) {
        Some(p) if p > 0 => p,
        _ => pid,
    }
}

/// The pid the program sees for the process whose pid is `real` in this run.
pub fn shown(real: pid_t) -> pid_t {
    look_up(Way::ToRecorded, real)
}

/// The pid of this run for the pid `shown` that the program holds (a process group id too).
pub fn real(shown: pid_t) -> pid_t {
    look_up(Way::ToReal, shown)
}

/// A pid argument as `kill`, `waitpid` and `setpgid` take it: a process (> 0), or a process
/// group (< -1, negated); 0 and -1 are no process's.
pub fn real_target(pid: pid_t) -> pid_t {
    match pid {
        p if p > 0 => real(p),
        p if p < -1 => -real(-p),
        p => p,
    }
}

/// The process whose record had pid `recorded` is `real` in this replay (a later process
/// with either pid takes its place).
pub fn enter(recorded: pid_t, real: pid_t) {
    if let (Some(to_real), Some(to_recorded)) =
        (entry(Way::ToReal, recorded), entry(Way::ToRecorded, real))
    {
        to_real.store(real, Ordering::Release);
        to_recorded.store(recorded, Ordering::Release);
    }
}

/// Installs the table mapped at `base` (2 × [`PID_SLOTS`] i32s, for the image's life).
pub fn install(base: usize) {
    TABLE.store(base, Ordering::Release);
}

/// Whether this image has a table.
pub fn installed() -> bool {
    TABLE.load(Ordering::Acquire) != 0
}

/// Where, in a `siginfo_t`, the sender's pid is (`si_pid`, for a signal sent by a process or
/// by a child's end): after three ints, at the union's alignment.
const SI_PID_AT: usize = if std::mem::size_of::<usize>() == 8 {
    16
} else {
    12
};

/// `info` with its sender as the program sees it, when it names one (a signal sent by
/// `kill`, `sigqueue` or `tgkill`, or a child's SIGCHLD); unchanged otherwise (a fault's
/// siginfo holds an address there).
pub fn shown_siginfo(sig: c_int, mut info: libc::siginfo_t) -> libc::siginfo_t {
    let code = info.si_code;
    let sent = matches!(code, libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL);
    if sent || sig == libc::SIGCHLD && code > 0 {
        // SAFETY: a SIGCHLD's or a sent signal's siginfo, whose si_pid libc reads.
        let sender = unsafe { info.si_pid() };
        set_sender(&mut info, shown(sender));
    }
    info
}

/// Writes `pid` as the sender of `info` (`si_pid`), which must be a SIGCHLD's or a sent
/// signal's.
pub fn set_sender(info: &mut libc::siginfo_t, pid: pid_t) {
    // SAFETY: for these signals the union begins with the sender's pid (an int) at SI_PID_AT,
    // inside the 128-byte struct.
    unsafe {
        *(info as *mut libc::siginfo_t)
            .cast::<u8>()
            .add(SI_PID_AT)
            .cast::<pid_t>() = pid;
    }
}
