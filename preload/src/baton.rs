//! The baton: in a process with threads, one thread at a time drives the LD.
//!
//! The LD's state (`Ld`) is one per process and was made for one thread of socket I/O. Once
//! the process has threads whose locks are ordered (`crate::locks::threaded`), a hook that
//! reaches the LD (`hooks::active`) first takes the baton, and the hook gives it back when it
//! returns to the program (its guard is dropped). So the events of a process stay one
//! sequence, in the order the threads logged them, and replay can make each thread wait for
//! the events before its own (`replay/threads.rs`).
//!
//! A thread must not keep the baton while it waits for something another thread of the
//! process may have to do first: a receive, an accept, a ready set or a wait for a child is
//! made with the baton put down ([`put_down_for`]) and logged once the call has returned (its
//! place among the process's events is where it completed, after everything that caused it).
//! A send, a connect or a close keeps the baton through its real call: it is logged before
//! anything it causes can be logged.
//!
//! A futex word and thread-locals only; a forked child keeps the baton only if the thread that
//! forked held it (the only thread the child has), see [`forked_child`].

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// 0: free; 1: held; 2: held, and a thread may be waiting for it.
static WORD: AtomicU32 = AtomicU32::new(0);

/// Bumped at every event of a process with threads (replay: a thread waiting for its turn
/// waits for it to move).
static EVENTS: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// The guard depth at which this thread took the baton (0: it does not hold it).
    static HELD_AT: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread holds the baton.
pub fn held() -> bool {
    HELD_AT.try_with(|h| h.get() != 0).unwrap_or(false)
}

/// Takes the baton for the hook this thread is in (at guard depth `depth`), unless this thread
/// holds it already (or is in no hook: nothing would give it back).
pub fn take(depth: u32) {
    if depth == 0 || held() {
        return;
    }
    lock();
    let _ = HELD_AT.try_with(|h| h.set(depth));
}

/// The hook at guard depth `depth` returns: gives the baton back if that hook took it.
pub fn leaving(depth: u32) {
    if depth != 0 && HELD_AT.try_with(|h| h.get() == depth).unwrap_or(false) {
        let _ = HELD_AT.try_with(|h| h.set(0));
        unlock();
    }
}

/// Runs `f` (a call that may block until another thread, or another process, acts) with the
/// baton put down, when this thread holds it; takes it back after.
pub fn put_down_for<R>(f: impl FnOnce() -> R) -> R {
    let at = HELD_AT.try_with(|h| h.replace(0)).unwrap_or(0);
    if at == 0 {
        return f();
    }
    unlock();
    let r = f();
    lock();
    let _ = HELD_AT.try_with(|h| h.set(at));
    r
}

/// In a forked child: the only thread is the one that forked. It holds the baton if it held it
/// in the parent; any other holder is gone with its thread.
pub fn forked_child() {
    WORD.store(u32::from(held()), Ordering::SeqCst);
    EVENTS.store(0, Ordering::SeqCst);
}

/// An event happened (replay of a process with threads): wakes the threads waiting for theirs.
pub fn event_happened() {
    crate::locks::order::progressed();
    EVENTS.fetch_add(1, Ordering::SeqCst);
    futex_wake(&EVENTS);
}

/// Where [`event_happened`]'s count stands (read before checking whose turn it is).
pub fn events_seen() -> u32 {
    EVENTS.load(Ordering::SeqCst)
}

/// Waits, with the baton put down, until an event happens after `seen` was read (or a short
/// while has passed: the caller checks again).
pub fn await_event(seen: u32) {
    put_down_for(|| {
        let _waiting = crate::locks::order::Waiting::now();
        if EVENTS.load(Ordering::SeqCst) == seen {
            futex_wait(&EVENTS, seen, 20_000_000);
        }
    });
}

fn lock() {
    if WORD
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
    {
        return;
    }
    let _waiting = crate::locks::order::Waiting::now();
    while WORD.swap(2, Ordering::Acquire) != 0 {
        futex_wait(&WORD, 2, 50_000_000);
    }
}

fn unlock() {
    if WORD.swap(0, Ordering::Release) == 2 {
        futex_wake(&WORD);
    }
}

/// FUTEX_WAIT on `word` while it holds `value`, at most `ns` nanoseconds; errno kept.
fn futex_wait(word: &AtomicU32, value: u32, ns: i64) {
    let saved = crate::sys::errno();
    let timeout = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `word` is a live static u32; the timeout is ours. (Inside the guard, libc's
    // `syscall`, which the LD exports, goes straight to the kernel.)
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            value,
            &timeout as *const libc::timespec,
        )
    };
    crate::sys::set_errno(saved);
}

/// FUTEX_WAKE of every waiter on `word`; errno kept.
fn futex_wake(word: &AtomicU32) {
    let saved = crate::sys::errno();
    // SAFETY: `word` is a live static u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
    crate::sys::set_errno(saved);
}
