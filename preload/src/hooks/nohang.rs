//! Non-blocking waits (`WNOHANG`), and blocking waits for any child: which child, if any, a
//! wait returned depends on when each child ended, and a SIGCHLD handler's `waitpid(-1, WNOHANG)` loop decides from it (nginx's
//! master, postgres's postmaster, gunicorn's arbiter). Record logs the outcome as a value line
//! (`~w3`: child number 3; `~w0`: none yet); replay waits for exactly that child (blocking)
//! or returns 0 without asking the kernel, so the handler reaps what the record's reaped.
//! Children are named by their number (as in `Fork`), which this image learns at each fork.
//!
//! A wait the record did not log (more waits in replay than in the record, a child this image
//! did not fork) is made as asked.

use super::active;
use super::values::values_ld;
use crate::guard::Guard;
use crate::pids;
use crate::{real, record, replay, signals, sys};
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::Mode;
use libc::{c_int, pid_t};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

/// Before a fork of this image: in record, SIGCHLD stays blocked until the child's pid is
/// known by its number ([`forked`]) and the program is out of the hook ([`release_sigchld`]).
/// A child that ends at once raised its SIGCHLD while the parent's fork handler still talked
/// to the GD; the program's handler ran there, reaped a child this image could not name yet,
/// and its wait went unrecorded (`sig_malloc`: about 20 of 300 waits missing, and the replay's
/// loop waited for ever for children its handlers never reaped). Blocked, the handler runs in
/// the program's computation just after the fork returns: a moment the kernel's own timing
/// could have chosen. Returns the mask to give back.
pub fn hold_sigchld() -> Option<u64> {
    (signals::mode() == signals::RECORD).then(|| sys::block_signals(1 << (libc::SIGCHLD - 1)))
}

/// After a fork, outside the hook: gives back the mask [`hold_sigchld`] took (errno kept).
/// A SIGCHLD it lets through runs the handler as the fork returns, a place replay keeps
/// exactly: noted so ([`releasing`]), not reported as a signal in the program's computation.
pub fn release_sigchld(old: Option<u64>) {
    if let Some(old) = old {
        let err = sys::errno();
        RELEASING.store(true, SeqCst);
        sys::set_signal_mask(old);
        RELEASING.store(false, SeqCst);
        sys::set_errno(err);
    }
}

/// Set while [`release_sigchld`] unblocks SIGCHLD.
static RELEASING: AtomicBool = AtomicBool::new(false);

/// Whether a signal that comes now is one [`release_sigchld`] let through.
pub fn releasing() -> bool {
    RELEASING.load(SeqCst)
}

/// After a fork returned `pid` in this image: remembers the child's number. Returns the pid
/// to give the program (in replay, the record's child's: `Ld::created_child`).
pub fn forked(pid: pid_t) -> pid_t {
    crate::signals::forking(0);
    if pid > 0
        && let Some(ld) = crate::ld::running()
        && ld.fork_index > 0
    {
        crate::signals::add_kid(pid, ld.fork_index);
        return ld.created_child(ld.fork_index, pid);
    }
    pid
}

/// A wait for `pid` (as waitpid takes it) with `options`; `call(pid, options)` makes the real
/// one. Async-signal-safe (a SIGCHLD handler that interrupted a hook waits from inside it):
/// the outcome is noted in the LD's signal-safe ring and replay takes it from an atomic plan
/// (`preload/src/signals/mod.rs`).
pub fn recorded_wait(
    pid: pid_t,
    options: c_int,
    mut call: impl FnMut(pid_t, c_int) -> pid_t,
) -> pid_t {
    // A blocking wait for one given child returns that child; a blocking wait for any child
    // returns whichever ended first, which differs from run to run as a WNOHANG's outcome
    // does (`xargs -P 6` waits for any of its six children, then for none with WNOHANG: in
    // replay the blocking wait reaped another child than the record's, and the WNOHANG wait
    // for the record's child then failed with ECHILD).
    let any_child = pid <= 0;
    if (options & libc::WNOHANG == 0 && !any_child)
        || !values_ld().is_some_and(|ld| ld.mode == Mode::Record || ld.mode == Mode::Replay)
    {
        return call(pid, options);
    }
    match signals::mode() {
        signals::RECORD => {
            // A SIGCHLD raised by the end of the child a blocking wait returns runs the
            // handler on the way out of the call, before the outcome is noted: the history
            // would say the handler came first, and the replay's handler would take the
            // wait's child (`tests/progs/sig_reapboth.c`). Kept blocked during the call, it
            // runs just after the note: the same run, in an order the history tells right.
            let blocking = options & libc::WNOHANG == 0;
            let old = blocking.then(|| sys::block_signals(1 << (libc::SIGCHLD - 1)));
            let r = call(pid, options);
            let err = sys::errno();
            let child = match r {
                0 => Some(0),
                p if p > 0 => Some(signals::kid_index(p)).filter(|i| *i > 0),
                _ => None,
            };
            if let Some(child) = child {
                signals::note_reaped(child);
            }
            if let Some(old) = old {
                sys::set_signal_mask(old);
            }
            sys::set_errno(err);
            r
        }
        signals::REPLAY => {
            if !signals::in_program_handler()
                && let Some(ld) = crate::ld::running()
            {
                replay::signals::before_planned_wait(ld);
            }
            let events = crate::ld::running().map_or(0, |ld| ld.events());
            let Some(child) = signals::take_planned_wait(events) else {
                return call(pid, options);
            };
            signals::note_reaped(child);
            // A delivery that waited for this wait to be made may run once the program is
            // back from the hook.
            crate::guard::defer();
            if child == 0 {
                if options & libc::WNOHANG == 0 {
                    // A blocking wait cannot come out as "none yet": not the record's wait.
                    return call(pid, options);
                }
                return 0;
            }
            if options & libc::WNOHANG != 0
                && crate::ld::gd::may_send()
                && let Some(ld) = crate::ld::running()
            {
                // Made blocking below: a halting replay must let the child end first (the
                // wait comes between two events, before the actor asks for the next one).
                replay::process::before_wait(ld);
            }
            match signals::kid_pid(child) {
                // The recorded child, however long it takes to end. A signal that interrupts
                // the wait meanwhile does not end it: the record's wait returned the child
                // (retried by the program instead, it would not be this recorded wait, and a
                // shell's `wait` builtin then slept for ever with the child unreaped).
                Some(kid) => loop {
                    let r = call(kid, options & !libc::WNOHANG);
                    if r >= 0 || sys::errno() != libc::EINTR {
                        break r;
                    }
                },
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
    super::keeping_errno(|| {
        let guard = Guard::enter();
        if !programs(guard.is_none()) {
            // SAFETY: the caller's arguments.
            return unsafe { real::waitpid(pid, status, options) };
        }
        if guard.is_some() {
            crate::replay::signals::at_call();
            before_wait(options);
        }
        let mut own = 0;
        let status = status_word(status, &mut own);
        let pid = pids::real_target(pid);
        // A blocking wait puts the baton down (`baton.rs`): another thread may have to act first.
        let r = recorded_wait(pid, options, |p, o| {
            // SAFETY: `status` is the program's int (waitpid's contract) or ours.
            crate::baton::put_down_for(|| unsafe { real::waitpid(p, status, o) })
        });
        if guard.is_none() {
            // SAFETY: `status` is the word the wait just filled.
            unsafe { defer_reap(r, status, options) };
            return shown(r);
        }
        // SAFETY: `status` is the word the wait just filled.
        shown(unsafe { waited(r, status, options) })
    })
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
    super::keeping_errno(|| {
        let guard = Guard::enter();
        if !programs(guard.is_none()) {
            // SAFETY: the caller's arguments.
            return unsafe { real::wait4(pid, status, options, usage) };
        }
        if guard.is_some() {
            crate::replay::signals::at_call();
            before_wait(options);
        }
        let mut own = 0;
        let status = status_word(status, &mut own);
        let pid = pids::real_target(pid);
        let r = recorded_wait(pid, options, |p, o| {
            // SAFETY: `status` is the program's int or ours; `usage` is null or the program's.
            crate::baton::put_down_for(|| unsafe { real::wait4(p, status, o, usage) })
        });
        if guard.is_none() {
            // SAFETY: `status` is the word the wait just filled.
            unsafe { defer_reap(r, status, options) };
            return shown(r);
        }
        // SAFETY: `status` is the word the wait just filled.
        shown(unsafe { waited(r, status, options) })
    })
}

/// A wait's result (a child's pid when > 0) as the program sees it.
fn shown(r: pid_t) -> pid_t {
    if r > 0 { pids::shown(r) } else { r }
}

/// wait(2): waitpid of any child, blocking.
///
/// # Safety
/// Called by the program in place of libc's, with arguments valid for it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wait(status: *mut c_int) -> pid_t {
    super::keeping_errno(|| {
        // SAFETY: the caller's arguments.
        unsafe { waitpid(-1, status, 0) }
    })
}

/// A wait the program's signal handler made inside one of our hooks (a SIGCHLD handler that
/// interrupted a recorded read): the hook may be talking to the GD, so a child it reaped is
/// noted for the actor's next event (`preload/src/ld/reaps.rs`); a halting replay must let
/// that child end.
///
/// # Safety
/// `status` must be the word the wait just filled.
unsafe fn defer_reap(r: pid_t, status: *mut c_int, options: c_int) {
    if r > 0 && options & libc::WNOWAIT == 0 {
        // SAFETY: as the caller promises.
        let s = unsafe { *status };
        if libc::WIFEXITED(s) || libc::WIFSIGNALED(s) {
            crate::ld::reaps::defer(r, s);
        }
    }
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
    super::keeping_errno(|| {
        // SAFETY: the caller's arguments.
        unsafe { wait4(-1, status, options, usage) }
    })
}

/// Before a blocking wait for a child (not an event): a halting replay makes sure that what the
/// actor's next event needs (its children's exits, for its own exit) is under way.
pub(super) fn before_wait(options: c_int) {
    if options & libc::WNOHANG != 0 {
        return;
    }
    crate::replay::cursor::before_blocking(false);
    if let Some(ld) = active()
        && ld.mode == Mode::Replay
    {
        replay::process::before_wait(ld);
    }
}

/// After a wait that returned `child`, which ended with `status` (`None`: it did not
/// terminate): the GD is told which child a wait reaped, and how it ended. A `WNOHANG` wait
/// that found a child ended counts too: what the program does next may rest on it (xargs -P
/// reaps its finished children so before it blocks for one, and a halting replay must let
/// that child end).
pub(super) fn after_wait(options: c_int, child: pid_t, status: Option<ExitStatus>) {
    if child <= 0 || options & libc::WNOWAIT != 0 {
        return;
    }
    if let Some(status) = status
        && let Some(ld) = active()
    {
        record::process::reaped(ld, child, Some(status));
    }
}

/// How a child ended, from the status word of a wait (`None`: stopped or continued).
fn ended(s: c_int) -> Option<ExitStatus> {
    if libc::WIFEXITED(s) {
        Some(ExitStatus::Exited(libc::WEXITSTATUS(s)))
    } else if libc::WIFSIGNALED(s) {
        Some(ExitStatus::Signaled(libc::WTERMSIG(s)))
    } else {
        None
    }
}

/// The status word a wait fills: the program's, or ours when it passed null (a child's end is
/// needed either way).
pub(super) fn status_word(status: *mut c_int, own: &mut c_int) -> *mut c_int {
    if status.is_null() { own } else { status }
}

/// The end of a wait that returned `r` (a child's pid when > 0), keeping errno.
///
/// # Safety
/// `status` must be the status word the wait just filled.
pub(super) unsafe fn waited(r: pid_t, status: *mut c_int, options: c_int) -> pid_t {
    if r > 0 {
        let err = sys::errno();
        // SAFETY: as the caller promises.
        after_wait(options, r, ended(unsafe { *status }));
        sys::set_errno(err);
    }
    r
}
