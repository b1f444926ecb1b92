//! Unnamed POSIX semaphores (`sem_t`): `sem_post` and the waits are accesses of a lock object
//! (`preload/src/locks/`), in a process whose threads are ordered.
//!
//! Python's `threading.Lock`, `Event`, `Condition` and `queue` are semaphores underneath:
//! which thread's wait took a post, and whether a `sem_trywait` found the count at zero, is
//! a race that decides, among other things, whether the waiting thread lets go of the
//! interpreter lock (it does only when it must block). Record notes a post before the count
//! goes up and a wait once it returned (with its errno), so every wait comes after the post it
//! took; replay grants them in that order, makes a wait the record's succeeded for real (its
//! post has been made), and fails one the record's failed with the record's errno, without a
//! call.

use ddbx_wire::locks::{Op, kind};
use libc::{c_int, c_uint, sem_t, timespec};

use crate::locks::{self, REPLAY, order};
use crate::{ordered_or, real, sys};

/// sem_init(3): the address holds a new object from now on.
///
/// # Safety
/// As for sem_init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_init(s: *mut sem_t, shared: c_int, value: c_uint) -> c_int {
    if locks::threaded() {
        locks::forget(s as usize);
    }
    // SAFETY: the caller's arguments.
    unsafe { real::sem_init(s, shared, value) }
}

/// sem_destroy(3): the address holds no object any more.
///
/// # Safety
/// As for sem_destroy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_destroy(s: *mut sem_t) -> c_int {
    if locks::threaded() {
        locks::forget(s as usize);
    }
    // SAFETY: the caller's semaphore.
    unsafe { real::sem_destroy(s) }
}

/// sem_post(3).
///
/// # Safety
/// As for sem_post.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_post(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    let real = || unsafe { real::sem_post(s) };
    let ((), me) = ordered_or!(real());
    if locks::mode() != REPLAY {
        // Noted first: a wait that this post ends is noted after it returns.
        if let Some(o) = locks::record_object(s as usize, kind::SEM, me) {
            locks::note(o, locks::access(me, Op::Post, 0));
        }
        return real();
    }
    super::pthread::access(s as usize, kind::SEM, me, Op::Post, real, |_| real())
}

/// One wait made by `call` (0 or -1 with errno), as an access: recorded with its errno,
/// replayed in its turn.
fn take(s: *mut sem_t, call: impl Fn() -> c_int) -> c_int {
    let ((), me) = ordered_or!(call());
    // The outcome as an access's argument: 0, or the errno.
    let outcome = || {
        if call() == 0 { 0 } else { sys::errno() }
    };
    let r = super::pthread::access(s as usize, kind::SEM, me, Op::Take, outcome, |a| {
        if a.arg != 0 {
            return a.arg as c_int;
        }
        // The post this wait took has been made: it returns at once, or as soon as the
        // kernel's wake comes.
        let _waiting = order::Waiting::now();
        loop {
            // SAFETY: the program's semaphore.
            if unsafe { real::sem_wait(s) } == 0 {
                return 0;
            }
            if sys::errno() != libc::EINTR {
                return sys::errno();
            }
        }
    });
    if r == 0 {
        0
    } else {
        sys::set_errno(r);
        -1
    }
}

/// sem_wait(3).
///
/// # Safety
/// As for sem_wait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_wait(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    take(s, || unsafe { real::sem_wait(s) })
}

/// sem_trywait(3): its EAGAIN is recorded and replayed.
///
/// # Safety
/// As for sem_trywait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_trywait(s: *mut sem_t) -> c_int {
    // SAFETY: the caller's semaphore.
    take(s, || unsafe { real::sem_trywait(s) })
}

/// sem_timedwait(3): its ETIMEDOUT is recorded and replayed.
///
/// # Safety
/// As for sem_timedwait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_timedwait(s: *mut sem_t, t: *const timespec) -> c_int {
    // SAFETY: the caller's semaphore and time.
    take(s, || unsafe { real::sem_timedwait(s, t) })
}

/// sem_clockwait(3): as sem_timedwait.
///
/// # Safety
/// As for sem_clockwait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sem_clockwait(
    s: *mut sem_t,
    clock: libc::clockid_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's semaphore, clock and time.
    take(s, || unsafe { real::sem_clockwait(s, clock, t) })
}
