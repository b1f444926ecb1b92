//! Non-blocking waits (`WNOHANG`): which child, if any, a wait returned depends on when each
//! child ended, and a SIGCHLD handler's `waitpid(-1, WNOHANG)` loop decides from it (nginx's
//! master, postgres's postmaster, gunicorn's arbiter). Record logs the outcome as a value line
//! (`~w3`: child number 3; `~w0`: none yet); replay waits for exactly that child (blocking)
//! or returns 0 without asking the kernel, so the handler reaps what the record's reaped.
//! Children are named by their number (as in `Fork`), which this image learns at each fork.
//!
//! A wait the record did not log (more waits in replay than in the record, a child this image
//! did not fork) is made as asked.

use super::values::values_ld;
use crate::guard::Guard;
use crate::{real, signals};
use ddbx_wire::proto::Mode;
use libc::{c_int, pid_t};

/// After a fork returned `pid` in this image: remembers the child's number. Returns `pid`.
pub fn forked(pid: pid_t) -> pid_t {
    if pid > 0
        && let Some(ld) = crate::ld::running()
        && ld.fork_index > 0
    {
        crate::signals::add_kid(pid, ld.fork_index);
    }
    pid
}

/// A wait for `pid` (as waitpid takes it) with `options`; `call(pid, options)` makes the real
/// one. Async-signal-safe (a SIGCHLD handler that interrupted a hook waits from inside it):
/// the outcome is noted in the LD's signal-safe ring and replay takes it from an atomic plan
/// (`preload/src/signals.rs`).
pub fn wait(pid: pid_t, options: c_int, mut call: impl FnMut(pid_t, c_int) -> pid_t) -> pid_t {
    if options & libc::WNOHANG == 0
        || !values_ld().is_some_and(|ld| ld.mode == Mode::Record || ld.mode == Mode::Replay)
    {
        return call(pid, options);
    }
    match signals::mode() {
        signals::RECORD => {
            let r = call(pid, options);
            let child = match r {
                0 => Some(0),
                p if p > 0 => Some(signals::kid_index(p)).filter(|i| *i > 0),
                _ => None,
            };
            if let Some(child) = child {
                signals::note_reaped(child);
            }
            r
        }
        signals::REPLAY => {
            let events = crate::ld::running().map_or(0, |ld| ld.events());
            let Some(child) = signals::take_planned_wait(events) else {
                return call(pid, options);
            };
            signals::note_reaped(child);
            if child == 0 {
                return 0;
            }
            match signals::kid_pid(child) {
                // The recorded child, however long it takes to end.
                Some(kid) => call(kid, options & !libc::WNOHANG),
                None => call(pid, options),
            }
        }
        _ => call(pid, options),
    }
}

/// Whether a wait made inside the guard is the program's (its signal handler, run inside a
/// hook it interrupted), not the LD's own.
fn programs(inside: bool) -> bool {
    !inside || signals::in_program_handler()
}

/// waitpid(2).
///
/// # Safety
/// Called by the program in place of libc's, with arguments valid for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn waitpid(pid: pid_t, status: *mut c_int, options: c_int) -> pid_t {
    let guard = Guard::enter();
    if !programs(guard.is_none()) {
        // SAFETY: the caller's arguments.
        return unsafe { real::waitpid(pid, status, options) };
    }
    if guard.is_some() {
        super::process::before_wait(options);
    }
    let mut own = 0;
    let status = super::process::status_word(status, &mut own);
    // SAFETY: `status` is the program's int (waitpid's contract) or ours.
    let r = wait(pid, options, |p, o| unsafe { real::waitpid(p, status, o) });
    if guard.is_none() {
        return r;
    }
    // SAFETY: `status` is the word the wait just filled.
    unsafe { super::process::waited(r, status, options) }
}

/// wait4(2).
///
/// # Safety
/// Called by the program in place of libc's, with arguments valid for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wait4(
    pid: pid_t,
    status: *mut c_int,
    options: c_int,
    usage: *mut libc::rusage,
) -> pid_t {
    let guard = Guard::enter();
    if !programs(guard.is_none()) {
        // SAFETY: the caller's arguments.
        return unsafe { real::wait4(pid, status, options, usage) };
    }
    if guard.is_some() {
        super::process::before_wait(options);
    }
    let mut own = 0;
    let status = super::process::status_word(status, &mut own);
    // SAFETY: `status` is the program's int or ours; `usage` is null or the program's.
    let r = wait(pid, options, |p, o| unsafe {
        real::wait4(p, status, o, usage)
    });
    if guard.is_none() {
        return r;
    }
    // SAFETY: `status` is the word the wait just filled.
    unsafe { super::process::waited(r, status, options) }
}

/// wait3(2): wait4 of any child.
///
/// # Safety
/// Called by the program in place of libc's, with arguments valid for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wait3(
    status: *mut c_int,
    options: c_int,
    usage: *mut libc::rusage,
) -> pid_t {
    // SAFETY: the caller's arguments.
    unsafe { wait4(-1, status, options, usage) }
}
