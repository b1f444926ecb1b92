//! Sleeps: nanosleep, clock_nanosleep (its hook is in `values.rs`, which moves an absolute
//! deadline by the replayed clock's offset), usleep and sleep. None is an event; two things
//! happen around them:
//!
//! * Past the end of a killed process's history, a sleep is the call where the record's
//!   process was killed: the signal held until then acts
//!   (`crate::replay::cursor::before_blocking`).
//! * In replay, a signal that arrives during a sleep but that the record took inside a later
//!   call is kept for that call (`preload/src/replay/signals.rs`). The kernel still ended the
//!   sleep when the LD's handler ran; the program never learns of it: the sleep goes on for
//!   what is left, as the record's did (gunicorn's arbiter, handed its SIGTERM in the
//!   `time.sleep` between two forks rather than in the `select` after them, saw its stop
//!   request before that `select`, made none, and exited 3 events early). The loop that
//!   sleeps through is `crate::replay::signals::asleep`.
//!
//! glibc's `sleep` and `usleep` call nanosleep inside libc, where no hook sees it: they have
//! hooks of their own.

use crate::real;
use crate::replay::signals::asleep;
use crate::sys;
use libc::{c_int, c_uint, clockid_t, timespec};

/// The real clock_nanosleep of `clock_nanosleep`'s hook, with `deadline` moved.
///
/// # Safety
/// `deadline` is a valid timespec; `rem` is null or a timespec the program lets us write.
pub unsafe fn clock_sleep(
    clock: clockid_t,
    flags: c_int,
    deadline: *const timespec,
    rem: *mut timespec,
) -> c_int {
    if deadline.is_null() {
        // SAFETY: passed on as given: the real call reports the error.
        return unsafe { real::clock_nanosleep(clock, flags, deadline, rem) };
    }
    // SAFETY: checked non-null; the program's (or our moved copy).
    let mut left = unsafe { *deadline };
    let absolute = flags & libc::TIMER_ABSTIME != 0;
    let err = asleep(&mut left, |left| {
        let mut rest = zero();
        // SAFETY: our own timespecs.
        let err = unsafe { real::clock_nanosleep(clock, flags, left, &mut rest) };
        if err == libc::EINTR && !absolute {
            *left = rest;
        }
        err
    });
    if err == libc::EINTR && !absolute && !rem.is_null() {
        // SAFETY: the program's timespec (checked non-null).
        unsafe { *rem = left };
    }
    err
}

/// A zero timespec.
fn zero() -> timespec {
    timespec {
        tv_sec: 0,
        tv_nsec: 0,
    }
}

/// A relative sleep of `left` by the real nanosleep; the error number (0: slept to its end).
fn nap(left: &mut timespec) -> c_int {
    crate::replay::cursor::before_blocking(true);
    asleep(left, |left| {
        let mut rest = zero();
        // SAFETY: our own timespecs.
        if unsafe { real::nanosleep(left, &mut rest) } == 0 {
            return 0;
        }
        let err = sys::errno();
        if err == libc::EINTR {
            *left = rest;
        }
        err
    })
}

/// nanosleep(2).
///
/// # Safety
/// Called by the program in place of libc's, with valid arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    super::keeping_errno(|| {
        if req.is_null() || crate::guard::inside() {
            // SAFETY: passed on as given (the LD's own sleeps, or an error to report).
            return unsafe { real::nanosleep(req, rem) };
        }
        // SAFETY: checked non-null: the program's timespec.
        let mut left = unsafe { *req };
        match nap(&mut left) {
            0 => 0,
            err => {
                if err == libc::EINTR && !rem.is_null() {
                    // SAFETY: the program's timespec (checked non-null).
                    unsafe { *rem = left };
                }
                sys::set_errno(err);
                -1
            }
        }
    })
}

/// usleep(3), as glibc makes it: nanosleep.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn usleep(us: libc::useconds_t) -> c_int {
    super::keeping_errno(|| {
        let mut left = timespec {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_nsec: (us % 1_000_000) as libc::c_long * 1000,
        };
        match nap(&mut left) {
            0 => 0,
            err => {
                sys::set_errno(err);
                -1
            }
        }
    })
}

/// sleep(3), as glibc makes it: nanosleep; what is left, rounded up, if a handler ended it.
///
/// # Safety
/// Called by the program in place of libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sleep(s: c_uint) -> c_uint {
    super::keeping_errno(|| {
        let mut left = timespec {
            tv_sec: s as libc::time_t,
            tv_nsec: 0,
        };
        match nap(&mut left) {
            0 => 0,
            _ => (left.tv_sec + libc::time_t::from(left.tv_nsec > 0)) as c_uint,
        }
    })
}
