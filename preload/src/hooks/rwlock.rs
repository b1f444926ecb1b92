//! Read-write locks (`pthread_rwlock_t`): every acquisition, read or write, and every failed
//! try or timed attempt, is an access of a lock object (`preload/src/locks/`), in a process
//! whose threads are ordered (paper 000: per object, the sequence of (thread, read|write)).
//!
//! Record notes an acquisition once the real call returned, while the lock is held, so the
//! accesses are in the order the lock was taken: a writer's comes after those of the readers
//! it waited for (they noted theirs before letting go), and several readers holding the lock
//! together come in any order, which replay may keep. Replay grants them in that order, makes
//! an acquisition the record made for real and blocking (a writer then waits for the readers
//! before it to let go, as it did), and fails one the record's failed with its errno, without
//! a call. `pthread_rwlock_unlock` is not hooked: an unlock is not an access (the next
//! acquisition's turn orders it), as for mutexes.

use ddbx_wire::locks::{Access, Op, kind};
use libc::{c_int, pthread_rwlock_t, timespec};

use crate::locks::{self, order};
use crate::{ordered_or, real};

/// Read or write.
#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// Replay of an acquisition the record made (`arg` 0) or failed (`arg`: its error): made for
/// real, blocking, or failed without a call.
fn acquire_as_recorded(l: *mut pthread_rwlock_t, side: Side, a: Access) -> c_int {
    if a.arg != 0 {
        return a.arg as c_int;
    }
    let _waiting = order::Waiting::now();
    // SAFETY: the program's lock, as it passed it.
    unsafe {
        match side {
            Side::Read => real::pthread_rwlock_rdlock(l),
            Side::Write => real::pthread_rwlock_wrlock(l),
        }
    }
}

/// One acquisition attempt of `l` (`op`), made by `real` in record.
fn acquire(l: *mut pthread_rwlock_t, side: Side, op: Op, real: impl Fn() -> c_int) -> c_int {
    let (_guard, me) = ordered_or!(real());
    super::pthread::access(l as usize, kind::RWLOCK, me, op, real, |a| {
        acquire_as_recorded(l, side, a)
    })
}

/// pthread_rwlock_rdlock(3).
///
/// # Safety
/// As for pthread_rwlock_rdlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's lock.
    acquire(l, Side::Read, Op::RdLock, || unsafe {
        real::pthread_rwlock_rdlock(l)
    })
}

/// pthread_rwlock_tryrdlock(3): its EBUSY is recorded and replayed.
///
/// # Safety
/// As for pthread_rwlock_tryrdlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's lock.
    acquire(l, Side::Read, Op::TryRdLock, || unsafe {
        real::pthread_rwlock_tryrdlock(l)
    })
}

/// pthread_rwlock_timedrdlock(3): its ETIMEDOUT is recorded and replayed.
///
/// # Safety
/// As for pthread_rwlock_timedrdlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's lock and time.
    acquire(l, Side::Read, Op::TimedRdLock, || unsafe {
        real::pthread_rwlock_timedrdlock(l, t)
    })
}

/// pthread_rwlock_clockrdlock(3): as timedrdlock.
///
/// # Safety
/// As for pthread_rwlock_clockrdlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    l: *mut pthread_rwlock_t,
    clock: libc::clockid_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's lock, clock and time.
    acquire(l, Side::Read, Op::TimedRdLock, || unsafe {
        real::pthread_rwlock_clockrdlock(l, clock, t)
    })
}

/// pthread_rwlock_wrlock(3).
///
/// # Safety
/// As for pthread_rwlock_wrlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's lock.
    acquire(l, Side::Write, Op::WrLock, || unsafe {
        real::pthread_rwlock_wrlock(l)
    })
}

/// pthread_rwlock_trywrlock(3): its EBUSY is recorded and replayed.
///
/// # Safety
/// As for pthread_rwlock_trywrlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's lock.
    acquire(l, Side::Write, Op::TryWrLock, || unsafe {
        real::pthread_rwlock_trywrlock(l)
    })
}

/// pthread_rwlock_timedwrlock(3): its ETIMEDOUT is recorded and replayed.
///
/// # Safety
/// As for pthread_rwlock_timedwrlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    l: *mut pthread_rwlock_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's lock and time.
    acquire(l, Side::Write, Op::TimedWrLock, || unsafe {
        real::pthread_rwlock_timedwrlock(l, t)
    })
}

/// pthread_rwlock_clockwrlock(3): as timedwrlock.
///
/// # Safety
/// As for pthread_rwlock_clockwrlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    l: *mut pthread_rwlock_t,
    clock: libc::clockid_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's lock, clock and time.
    acquire(l, Side::Write, Op::TimedWrLock, || unsafe {
        real::pthread_rwlock_clockwrlock(l, clock, t)
    })
}

/// pthread_rwlock_init(3): the address holds a new object from now on.
///
/// # Safety
/// As for pthread_rwlock_init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const libc::pthread_rwlockattr_t,
) -> c_int {
    if locks::threaded() {
        locks::forget(l as usize);
    }
    // SAFETY: the caller's arguments.
    unsafe { real::pthread_rwlock_init(l, attr) }
}

/// pthread_rwlock_destroy(3): the address holds no object any more.
///
/// # Safety
/// As for pthread_rwlock_destroy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    if locks::threaded() {
        locks::forget(l as usize);
    }
    // SAFETY: the caller's lock.
    unsafe { real::pthread_rwlock_destroy(l) }
}
