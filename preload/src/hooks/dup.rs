//! Duplicating fds (dup, dup2, dup3, `fcntl(F_DUPFD)`) and fcntl's other tracked commands
//! (`O_NONBLOCK`). A dup of a channel end is a `Dup` event; a dup over the last fd on a
//! connection lets go of it (`Close`); a session pipe put on fd 0, 1 or 2 gets its standard
//! stream wrapped (`stdio.rs`). File locks (`fcntl(F_SETLKW)`, `flock`, `lockf`) on a regular
//! file take turns among the session's processes (`super::io::file_lock`), and those taken
//! for writing on a file whose writes take turns wait, in replay, for the turn of the write
//! they guard first (`super::io::before_file_lock`).

use super::socket::{let_go, letting_go};
use super::{active, hook};
use crate::{fds, real, replay};
use ddbx_wire::proto::Mode;
use libc::{c_int, c_ulong};

hook! {
    /// dup(2).
    fn dup(fd: c_int) -> c_int {
        // SAFETY: no pointer arguments.
        let r = super::made_fd(|| unsafe { real::dup(fd) });
        if r >= 0 {
            fds::dup(fd, r);
            dup_event(fd, r);
        }
        r
    }
}

/// `call` makes `new` refer to what `old` refers to (dup2, dup3): when that closes the last fd
/// on a connection, that is a `Close` event.
fn dup_over(old: c_int, new: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let lets_go = if old != new && fds::id(old).is_some() && fds::id(old) != fds::id(new) {
        letting_go(new)
    } else {
        None
    };
    match lets_go {
        Some(ld) => let_go(ld, new, call),
        None => call(),
    }
}

/// `new` was just made to refer to what `old` refers to: on a channel end, that is a `Dup`
/// event (in recordings that have them: those that record pipes), so that the analysis knows
/// which channel the new number is (a shell's `dup2(pipe, 1)` before an exec).
fn dup_event(old: c_int, new: c_int) {
    let kind = fds::kind(new);
    if old == new || kind & fds::STREAM == 0 || kind & (fds::LISTENING | fds::OURS) != 0 {
        return;
    }
    let Some(ld) = active().filter(|ld| ld.records_pipes() && ld.is_io_thread()) else {
        return;
    };
    let rec = ddbx_wire::Record::Dup {
        fd: old,
        new_fd: new,
    };
    match ld.mode {
        Mode::Record => ld.emit(&rec),
        Mode::Replay => replay::socket::dup(ld, &rec),
    }
}

/// Makes room for the program at `new` if the LD uses that number.
fn make_room(new: c_int) {
    if let Some(t) = active().and_then(|ld| ld.trace.as_mut()) {
        t.forget_fd(new);
    }
    if fds::is_ours(new)
        && let Some(ld) = active()
    {
        ld.evacuate(new);
    }
}

hook! {
    /// dup2(2).
    fn dup2(old: c_int, new: c_int) -> c_int {
        make_room(new);
        // SAFETY: no pointer arguments.
        let r = dup_over(old, new, || unsafe { real::dup2(old, new) });
        if r >= 0 && old != new {
            fds::dup(old, r);
            dup_event(old, r);
            super::stdio::wrap_standard_stream(r);
        }
        r
    }
}

hook! {
    /// dup3(2).
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
        make_room(new);
        // SAFETY: no pointer arguments.
        let r = dup_over(old, new, || unsafe { real::dup3(old, new, flags) });
        if r >= 0 {
            fds::dup(old, r);
            dup_event(old, r);
            super::stdio::wrap_standard_stream(r);
        }
        r
    }
}

/// fcntl and fcntl64: dups and O_NONBLOCK are tracked.
///
/// # Safety
/// `arg` as fcntl(2) wants it for `cmd` (a pointer for the commands that take one).
unsafe fn on_fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    if matches!(
        cmd,
        libc::F_SETLK | libc::F_SETLKW | libc::F_OFD_SETLK | libc::F_OFD_SETLKW
    ) && arg != 0
    {
        // SAFETY: for these commands `arg` points to the caller's struct flock.
        let kind = unsafe { (*(arg as *const libc::flock)).l_type };
        if kind == libc::F_WRLCK as libc::c_short {
            super::io::before_file_lock(fd);
        }
    }
    // The owner of a file's signals is a pid (a process group negated), as the program sees
    // it (`preload/src/pids.rs`): nginx makes itself the owner of each worker's channel.
    let arg = if cmd == libc::F_SETOWN {
        crate::pids::real_target(arg as c_int) as c_ulong
    } else {
        arg
    };
    // SAFETY: the caller's arguments, valid for fcntl.
    let call = || unsafe { real::fcntl(fd, cmd, arg) };
    let r = if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) {
        super::made_fd(call)
    } else if let Some(waiting) = lock_command(cmd, arg) {
        // SAFETY: as `call`, with the waiting form of the same lock command.
        super::io::file_lock(fd, call, || unsafe { real::fcntl(fd, waiting, arg) })
    } else {
        call()
    };
    if r < 0 {
        return r;
    }
    match cmd {
        libc::F_GETOWN if r > 0 => return crate::pids::shown(r),
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            fds::dup(fd, r);
            dup_event(fd, r);
        }
        libc::F_SETFL => {
            if arg as c_int & libc::O_NONBLOCK != 0 {
                fds::update(fd, fds::NONBLOCK, 0);
            } else {
                fds::update(fd, 0, fds::NONBLOCK);
            }
        }
        _ => {}
    }
    r
}

/// For an fcntl command that takes a record lock (not one that lets go of it): the command
/// that takes the same lock waiting for it.
fn lock_command(cmd: c_int, arg: c_ulong) -> Option<c_int> {
    let waiting = match cmd {
        libc::F_SETLK | libc::F_SETLKW => libc::F_SETLKW,
        libc::F_OFD_SETLK | libc::F_OFD_SETLKW => libc::F_OFD_SETLKW,
        _ => return None,
    };
    // SAFETY: for these commands `arg` points to the caller's struct flock (null: EFAULT, no
    // lock).
    let kind = unsafe { (arg as *const libc::flock).as_ref() }?.l_type;
    (kind != libc::F_UNLCK as libc::c_short).then_some(waiting)
}

/// fcntl(2) (variadic in C; one integer-sized argument is ABI-compatible on Linux targets).
///
/// # Safety
/// Called by the program in place of fcntl, with `arg` as fcntl wants it for `cmd`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    let Some(_guard) = crate::guard::Guard::enter() else {
        // SAFETY: the program's arguments, passed on unchanged.
        return unsafe { real::fcntl(fd, cmd, arg) };
    };
    // SAFETY: `arg` as fcntl wants it for `cmd`, as our caller promises.
    unsafe { on_fcntl(fd, cmd, arg) }
}

/// fcntl64(2) (what Python calls).
///
/// # Safety
/// As for [`fcntl`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: same contract as fcntl.
    unsafe { fcntl(fd, cmd, arg) }
}

hook! {
    /// flock(2).
    fn flock(fd: c_int, op: c_int) -> c_int {
        if op & libc::LOCK_EX != 0 {
            super::io::before_file_lock(fd);
        }
        // SAFETY: no pointer arguments.
        let call = |op| unsafe { real::flock(fd, op) };
        if op & (libc::LOCK_EX | libc::LOCK_SH) == 0 {
            return call(op); // LOCK_UN
        }
        super::io::file_lock(fd, || call(op), || call(op & !libc::LOCK_NB))
    }
}

hook! {
    /// lockf(3) (glibc locks through its internal fcntl, which no preload sees).
    fn lockf(fd: c_int, cmd: c_int, len: libc::off_t) -> c_int {
        if cmd == libc::F_LOCK || cmd == libc::F_TLOCK {
            super::io::before_file_lock(fd);
        }
        // SAFETY: no pointer arguments.
        let call = |cmd| unsafe { real::lockf(fd, cmd, len) };
        if cmd != libc::F_LOCK && cmd != libc::F_TLOCK {
            return call(cmd); // F_ULOCK, F_TEST
        }
        super::io::file_lock(fd, || call(cmd), || call(libc::F_LOCK))
    }
}
