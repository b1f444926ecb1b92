//! Pids as the program sees them (`preload/src/ld/pids.rs`): in replay, the record's. These
//! entry points return a process's own ids, and take or return other processes' and process
//! groups'; the fork, spawn, wait, kill and signal-handler paths translate in their own files
//! through [`shown_to_program`] and [`real_for_program`].
//!
//! Not `hook!`s: they start nothing and take no guard (a pid is read early in a process's
//! life, by allocators and libraries' constructors, and from signal handlers). What the LD
//! itself asks goes through `sys`'s system calls, and never here; a call made from inside one
//! of our hooks is the LD's, unless the program's signal handler made it there.

use crate::ld::pids;
use crate::{signals, sys};
use libc::{c_int, pid_t};

/// Whether the running code is the program's: outside our hooks, or the program's signal
/// handler run inside one.
fn programs() -> bool {
    !crate::guard::inside() || signals::in_program_handler()
}

/// The pid (or process group id) `real`, as the program sees it.
pub fn shown_to_program(real: pid_t) -> pid_t {
    if real > 0 && programs() {
        pids::shown(real)
    } else {
        real
    }
}

/// The pid argument `pid` the program gave (a process, or a process group negated, as `kill`
/// and `waitpid` take it), as the kernel knows it.
pub fn real_for_program(pid: pid_t) -> pid_t {
    if programs() {
        pids::real_target(pid)
    } else {
        pid
    }
}

/// A pid or process group id the program gave that names no group by sign (`setpgid`,
/// `getsid`): 0 is the caller.
fn real_id(id: pid_t) -> pid_t {
    if id > 0 { real_for_program(id) } else { id }
}

/// A result that is a pid (or -1 with errno), as the program sees it.
fn shown_result(r: pid_t) -> pid_t {
    if r > 0 { shown_to_program(r) } else { r }
}

/// getpid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpid() -> pid_t {
    shown_to_program(sys::getpid())
}

/// getppid(2). A parent outside the session (ddbx, for the first process) is shown as the
/// record's; an orphan adopted by init stays 1.
#[unsafe(no_mangle)]
pub extern "C" fn getppid() -> pid_t {
    shown_to_program(sys::getppid())
}

/// gettid(2): the main thread's id is its process's pid; other threads' pass unchanged.
#[unsafe(no_mangle)]
pub extern "C" fn gettid() -> pid_t {
    let tid = sys::gettid();
    if tid == sys::getpid() {
        shown_to_program(tid)
    } else {
        tid
    }
}

/// getpgrp(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpgrp() -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getpgid, 0) } as pid_t)
}

/// getpgid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getpgid(pid: pid_t) -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getpgid, real_id(pid)) } as pid_t)
}

/// getsid(2).
#[unsafe(no_mangle)]
pub extern "C" fn getsid(pid: pid_t) -> pid_t {
    // SAFETY: no pointer arguments.
    shown_result(unsafe { libc::syscall(libc::SYS_getsid, real_id(pid)) } as pid_t)
}

/// setpgid(2).
#[unsafe(no_mangle)]
pub extern "C" fn setpgid(pid: pid_t, pgid: pid_t) -> c_int {
    // SAFETY: no pointer arguments.
    unsafe { libc::syscall(libc::SYS_setpgid, real_id(pid), real_id(pgid)) as c_int }
}

/// killpg(3): the kill of the group (`kill`'s hook translates it, and orders it in replay).
///
/// # Safety
/// None needed: no pointer arguments (unsafe as `kill`'s hook is).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn killpg(pgrp: pid_t, sig: c_int) -> c_int {
    if pgrp < 0 {
        sys::set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: no pointer arguments.
    unsafe { super::signal::kill(-pgrp, sig) }
}

/// tcgetpgrp(3).
#[unsafe(no_mangle)]
pub extern "C" fn tcgetpgrp(fd: c_int) -> pid_t {
    let mut pgrp: pid_t = 0;
    // SAFETY: TIOCGPGRP writes one pid_t into our local.
    let r = unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::TIOCGPGRP, &mut pgrp) };
    if r < 0 { -1 } else { shown_result(pgrp) }
}

/// tcsetpgrp(3).
#[unsafe(no_mangle)]
pub extern "C" fn tcsetpgrp(fd: c_int, pgrp: pid_t) -> c_int {
    let pgrp = real_id(pgrp);
    // SAFETY: TIOCSPGRP reads one pid_t from our local.
    unsafe { libc::syscall(libc::SYS_ioctl, fd, libc::TIOCSPGRP, &pgrp) as c_int }
}

/// Where, in a `siginfo_t`, the sender's pid is (`si_pid`, for a signal sent by a process or
/// by a child's end): after three ints, at the union's alignment.
const SI_PID_AT: usize = if std::mem::size_of::<usize>() == 8 {
    16
} else {
    12
};

/// The program's copy of `info`, its sender's pid as the program sees it, when it names one
/// (a signal sent by `kill`, `sigqueue` or `tgkill`, or a child's SIGCHLD): `None` otherwise
/// (a fault's siginfo holds an address there).
///
/// # Safety
/// `info` must be null or a valid siginfo.
pub unsafe fn shown_siginfo(sig: c_int, info: *const libc::siginfo_t) -> Option<libc::siginfo_t> {
    if info.is_null() {
        return None;
    }
    // SAFETY: a valid siginfo, as the caller promises.
    let mut copy = unsafe { *info };
    let code = copy.si_code;
    let sent = matches!(code, libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL);
    if !(sent || sig == libc::SIGCHLD && code > 0) {
        return None;
    }
    // SAFETY: a SIGCHLD's or a sent signal's siginfo, whose si_pid libc reads.
    let sender = unsafe { copy.si_pid() };
    set_sender(&mut copy, shown_to_program(sender));
    Some(copy)
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
