//! sigprocmask and pthread_sigmask: in replay, the default-fatal signals the LD holds
//! (`crate::fatal`) stay blocked whatever mask the program sets, and the mask the program
//! reads back is its own. haproxy sets an empty mask at its start: the SIGTERM that `timeout`
//! relays, arriving early in replay, ended it 4 events before its recorded end.

use crate::real;
use libc::{c_int, sigset_t};

/// The mask `set` with the held signals kept blocked, for `how`; `None`: `set` as it is.
pub(super) fn with_held(how: c_int, set: *const sigset_t) -> Option<sigset_t> {
    let held = crate::fatal::held();
    if held == 0 || set.is_null() || how == libc::SIG_BLOCK {
        return None;
    }
    // SAFETY: the program's set (checked non-null).
    let mut ours = unsafe { *set };
    // SAFETY: a sigset_t begins with the first 64 signals, bit `sig - 1`.
    let bits = unsafe { &mut *(&mut ours as *mut sigset_t).cast::<u64>() };
    match how {
        libc::SIG_SETMASK => *bits |= held,
        libc::SIG_UNBLOCK => *bits &= !held,
        _ => return None,
    }
    Some(ours)
}

/// Takes the held signals out of the mask read back in `old` (the program did not block
/// them).
fn without_held(old: *mut sigset_t) {
    let held = crate::fatal::held();
    if held != 0 && !old.is_null() {
        // SAFETY: the program's set (checked non-null), just filled by the call.
        unsafe { *old.cast::<u64>() &= !held };
    }
}

/// A mask call of the program, `call` the real one.
fn set_mask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
    call: impl FnOnce(c_int, *const sigset_t, *mut sigset_t) -> c_int,
) -> c_int {
    let ours = with_held(how, set);
    let set = ours.as_ref().map_or(set, |s| s as *const sigset_t);
    let replay = crate::signals::mode() == crate::signals::REPLAY;
    let before = if replay {
        crate::sys::block_signals(0)
    } else {
        0
    };
    let r = call(how, set, old);
    if r == 0 {
        without_held(old);
        if replay {
            let err = crate::sys::errno();
            crate::replay::signals::at_unblock(before & !crate::sys::block_signals(0));
            crate::sys::set_errno(err);
        }
    }
    r
}

/// sigprocmask(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigprocmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    super::keeping_errno(|| {
        // SAFETY: the program's arguments, `set` its own or our copy of it.
        set_mask(how, set, old, |h, s, o| unsafe {
            real::sigprocmask(h, s, o)
        })
    })
}

/// pthread_sigmask(3).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_sigmask(
    how: c_int,
    set: *const sigset_t,
    old: *mut sigset_t,
) -> c_int {
    super::keeping_errno(|| {
        // SAFETY: the program's arguments, `set` its own or our copy of it.
        set_mask(how, set, old, |h, s, o| unsafe {
            real::pthread_sigmask(h, s, o)
        })
    })
}
