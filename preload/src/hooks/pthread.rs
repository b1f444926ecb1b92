//! Threads and their locks: `pthread_create`, `pthread_join`, the mutex calls
//! and the condition variable calls (`preload/src/locks/`).
//!
//! `pthread_mutex_unlock` is not hooked at all: an unlock is not an access of the lock
//! history (the next acquisition's turn orders it), so the program calls libc's directly.
//!
//! These are not `hook!`s: a lock call first tests whether the process has created a thread
//! (one relaxed load) and goes straight to libc when not, so that single-threaded programs pay
//! nothing for them; then it tests the guard (`ordered_or!`).

use ddbx_wire::locks::{Access, Op, kind};
use libc::{c_int, c_void, pthread_cond_t, pthread_mutex_t, timespec};

use crate::guard::Guard;
use crate::locks::{self, REPLAY, order};
use crate::real;

/// pthread_create(3): the new thread gets the next id in the recorded order of creations
/// (it learns it from its handle: `locks::me`).
///
/// # Safety
/// As for pthread_create: `start` is a thread start routine, `thread` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let real = || {
        // SAFETY: the caller's arguments, valid for the real function.
        unsafe { real::pthread_create(thread, attr, start, arg) }
    };
    let Some(_guard) = Guard::enter() else {
        return real();
    };
    let Some(ld) = super::active() else {
        return real();
    };
    if locks::foreign_allocator() {
        ld.passthrough(
            super::passthrough::LOCKS,
            "the order of pthread locks (the program's malloc is not glibc's, and takes locks \
             that ddbx's own allocations take too)",
        );
        return real();
    }
    if !locks::start_threads() {
        return real();
    }
    let me = locks::me();
    if me == 0 {
        return real();
    }
    let id = if locks::mode() == REPLAY {
        // The creation's turn may wait for other threads' events: the baton is put down.
        crate::baton::put_down_for(|| locks::thread_table(me, Op::Create, 0)).map_or(0, |a| a.arg)
    } else {
        let id = locks::next_thread();
        locks::note(0, locks::access(me, Op::Create, id));
        id
    };
    locks::creating(true);
    let r = real();
    if r == 0 && locks::mode() == REPLAY {
        order::started();
    }
    if r == 0 && id != 0 && !thread.is_null() {
        // SAFETY: pthread_create wrote the handle.
        locks::register_thread(unsafe { *thread }, id);
    }
    locks::creating(false);
    r
}

/// pthread_join(3): noted on the thread table once it returns.
///
/// # Safety
/// As for pthread_join.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, ret: *mut *mut c_void) -> c_int {
    // A replay's stalled order of locks may be what the joined thread waits for.
    let waiting = (locks::threaded() && locks::mode() == REPLAY).then(order::Waiting::now);
    // SAFETY: the caller's arguments.
    let r = unsafe { real::pthread_join(thread, ret) };
    drop(waiting);
    if r == 0 && locks::threaded() {
        let Some(_guard) = Guard::enter() else {
            return r;
        };
        let me = locks::me();
        let joined = locks::thread_of(thread, true);
        if joined != 0 && locks::mode() == REPLAY {
            // It has ended for sure, even if it never learnt its id (a thread that made no
            // hooked call notes no exit): its exit turn is stepped over.
            order::ended(joined);
        }
        if me != 0 {
            locks::thread_table(me, Op::Join, joined);
        }
        locks::forget_thread(thread);
    }
    r
}

/// The calling thread's id when its lock call is ordered: once the process has threads,
/// outside the LD's own work (the guard) and for a thread the LD saw created. The lock hooks
/// only test the guard, they do not enter it: what they call (the real lock, the LD's atomics
/// and mapped file) never reaches a hook, and entering and leaving it cost as much as the
/// record's line.
#[macro_export]
macro_rules! ordered_or {
    ($real:expr) => {{
        if !$crate::locks::threaded() || $crate::guard::inside() {
            return $real;
        }
        let me = $crate::locks::me();
        if me == 0 {
            return $real;
        }
        ((), me)
    }};
}

/// One access to the object at `addr`: record makes the call (`call`) and notes its result;
/// replay waits for the access's turn and lets `mine` make it come out as recorded (`free`:
/// the call when replay does not order this object).
pub(crate) fn access(
    addr: usize,
    kind: u32,
    me: u32,
    op: Op,
    call: impl FnOnce() -> c_int,
    mine: impl FnOnce(Access) -> c_int,
) -> c_int {
    if locks::mode() != REPLAY {
        let r = call();
        if let Some(o) = locks::record_object(addr, kind, me) {
            let access = locks::access(me, op, r as u32);
            if kind == ddbx_wire::locks::kind::MUTEX {
                locks::note_acquired(o, access);
            } else {
                locks::note(o, access);
            }
        }
        return r;
    }
    let Some(plan) = locks::replay_plan() else {
        return call();
    };
    let Some(o) = order::object_of(plan, addr, me) else {
        return call();
    };
    match order::wait_turn(plan, o, me, op) {
        order::Turn::Mine(at, a) => {
            let r = mine(a);
            order::advance(o, at);
            r
        }
        order::Turn::Free => call(),
        order::Turn::Diverged(why) => {
            locks::give_up(&why);
            call()
        }
    }
}

/// Replay of an acquisition the record made (`arg` 0) or failed (`arg`: its error): made for
/// real, blocking (the previous holder let go at its own turn), or failed without a call.
fn acquire_as_recorded(m: *mut pthread_mutex_t, a: Access) -> c_int {
    if a.arg != 0 {
        return a.arg as c_int;
    }
    let _waiting = order::Waiting::now();
    // SAFETY: the program's mutex, as it passed it.
    unsafe { real::pthread_mutex_lock(m) }
}

/// pthread_mutex_lock(3).
///
/// # Safety
/// As for pthread_mutex_lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let real = || unsafe { real::pthread_mutex_lock(m) };
    let (_guard, me) = ordered_or!(real());
    access(m as usize, kind::MUTEX, me, Op::Lock, real, |a| {
        acquire_as_recorded(m, a)
    })
}

/// pthread_mutex_trylock(3): its EBUSY is recorded and replayed.
///
/// # Safety
/// As for pthread_mutex_trylock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's mutex.
    let real = || unsafe { real::pthread_mutex_trylock(m) };
    let (_guard, me) = ordered_or!(real());
    access(m as usize, kind::MUTEX, me, Op::TryLock, real, |a| {
        acquire_as_recorded(m, a)
    })
}

/// pthread_mutex_timedlock(3): its ETIMEDOUT is recorded and replayed.
///
/// # Safety
/// As for pthread_mutex_timedlock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's mutex and time.
    let real = || unsafe { real::pthread_mutex_timedlock(m, t) };
    let (_guard, me) = ordered_or!(real());
    access(m as usize, kind::MUTEX, me, Op::TimedLock, real, |a| {
        acquire_as_recorded(m, a)
    })
}

/// pthread_mutex_clocklock(3): as timedlock.
///
/// # Safety
/// As for pthread_mutex_clocklock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clock: libc::clockid_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's mutex, clock and time.
    let real = || unsafe { real::pthread_mutex_clocklock(m, clock, t) };
    let (_guard, me) = ordered_or!(real());
    access(m as usize, kind::MUTEX, me, Op::TimedLock, real, |a| {
        acquire_as_recorded(m, a)
    })
}

/// pthread_mutex_init(3): the address holds a new object from now on.
///
/// # Safety
/// As for pthread_mutex_init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const libc::pthread_mutexattr_t,
) -> c_int {
    if locks::threaded() {
        locks::forget(m as usize);
    }
    // SAFETY: the caller's arguments.
    unsafe { real::pthread_mutex_init(m, attr) }
}

/// pthread_mutex_destroy(3): the address holds no object any more.
///
/// # Safety
/// As for pthread_mutex_destroy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    if locks::threaded() {
        locks::forget(m as usize);
    }
    // SAFETY: the caller's mutex.
    unsafe { real::pthread_mutex_destroy(m) }
}

/// pthread_cond_init(3).
///
/// # Safety
/// As for pthread_cond_init.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const libc::pthread_condattr_t,
) -> c_int {
    if locks::threaded() {
        locks::forget(c as usize);
    }
    // SAFETY: the caller's arguments.
    unsafe { real::pthread_cond_init(c, attr) }
}

/// pthread_cond_destroy(3).
///
/// # Safety
/// As for pthread_cond_destroy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    if locks::threaded() {
        locks::forget(c as usize);
    }
    // SAFETY: the caller's condition variable.
    unsafe { real::pthread_cond_destroy(c) }
}

/// pthread_cond_signal(3).
///
/// # Safety
/// As for pthread_cond_signal.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's condition variable.
    let real = || unsafe { real::pthread_cond_signal(c) };
    let (_guard, me) = ordered_or!(real());
    access(c as usize, kind::COND, me, Op::Signal, real, |_| real())
}

/// pthread_cond_broadcast(3).
///
/// # Safety
/// As for pthread_cond_broadcast.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's condition variable.
    let real = || unsafe { real::pthread_cond_broadcast(c) };
    let (_guard, me) = ordered_or!(real());
    access(c as usize, kind::COND, me, Op::Broadcast, real, |_| real())
}

/// pthread_cond_wait(3).
///
/// # Safety
/// As for pthread_cond_wait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's condition variable and mutex.
    let real = || unsafe { real::pthread_cond_wait(c, m) };
    let (_guard, me) = ordered_or!(real());
    cond_wait(c, m, me, real)
}

/// pthread_cond_timedwait(3): whether it timed out is recorded and replayed.
///
/// # Safety
/// As for pthread_cond_timedwait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's condition variable, mutex and time.
    let real = || unsafe { real::pthread_cond_timedwait(c, m, t) };
    let (_guard, me) = ordered_or!(real());
    cond_wait(c, m, me, real)
}

/// pthread_cond_clockwait(3): as timedwait.
///
/// # Safety
/// As for pthread_cond_clockwait.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: libc::clockid_t,
    t: *const timespec,
) -> c_int {
    // SAFETY: the caller's condition variable, mutex, clock and time.
    let real = || unsafe { real::pthread_cond_clockwait(c, m, clock, t) };
    let (_guard, me) = ordered_or!(real());
    cond_wait(c, m, me, real)
}

/// A condition wait. Record: `wait` on the condition variable, the real wait, `woke` on the
/// mutex (held again: an acquisition) with the result. Replay never waits on the condition
/// variable: it lets go of the mutex, waits for the `wait`'s turn, and takes the mutex back at
/// the `woke`'s turn (a wakeup without a signal is one POSIX allows), so which waiter
/// a signal woke, and when a timed wait timed out, are the record's.
fn cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    me: u32,
    real: impl FnOnce() -> c_int,
) -> c_int {
    if locks::mode() != REPLAY {
        let om = locks::record_object(m as usize, kind::MUTEX, me);
        let oc = locks::record_object(c as usize, kind::COND, me);
        if let Some(oc) = oc {
            locks::note(oc, locks::access(me, Op::Wait, om.unwrap_or(0)));
        }
        let r = real();
        if let Some(om) = om {
            locks::note_acquired(om, locks::access(me, Op::Woke, r as u32));
        }
        return r;
    }
    let Some(plan) = locks::replay_plan() else {
        return real();
    };
    let (Some(om), Some(oc)) = (
        order::object_of(plan, m as usize, me),
        order::object_of(plan, c as usize, me),
    ) else {
        return real();
    };
    // SAFETY: the program's mutex, which it holds (cond_wait's contract).
    unsafe { real::pthread_mutex_unlock(m) };
    for (object, op) in [(oc, Op::Wait), (om, Op::Woke)] {
        match order::wait_turn(plan, object, me, op) {
            order::Turn::Mine(at, a) => {
                if op == Op::Woke {
                    let _waiting = order::Waiting::now();
                    // SAFETY: the program's mutex, taken back as the wait would have.
                    unsafe { real::pthread_mutex_lock(m) };
                }
                order::advance(object, at);
                if op == Op::Woke {
                    return a.arg as c_int;
                }
            }
            order::Turn::Free => break,
            order::Turn::Diverged(why) => {
                locks::give_up(&why);
                break;
            }
        }
    }
    // Ordering stopped between the two turns: take the mutex back (a spurious wakeup).
    // SAFETY: the program's mutex, let go above.
    unsafe { real::pthread_mutex_lock(m) };
    0
}
