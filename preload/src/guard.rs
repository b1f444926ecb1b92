//! The re-entrancy guard: ddbx's own I/O is never recorded.
//!
//! Every hook enters the guard before doing anything. Inside it (our own work, or a nested
//! hook call made by it, or a signal handler that interrupts a hook), calls go straight to the
//! real libc function. The flag is a const-initialised thread local without a destructor, so it
//! works before our constructor, in signal handlers and in TLS destructors.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    static PAST_EVENT: Cell<bool> = const { Cell::new(false) };
    static TID: Cell<i32> = const { Cell::new(0) };
    /// How many guards this thread holds (more than one only through [`outside`]).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// What runs as this thread's hook returns to the program ([`at_this_leave`]; 0: nothing).
    static AT_LEAVE: Cell<usize> = const { Cell::new(0) };
}

/// Proof that this thread is inside a hook; leaving the scope leaves the guard.
pub struct Guard(());

impl Guard {
    /// Enters the guard, or `None` when this thread is already inside one.
    pub fn enter() -> Option<Guard> {
        if !INSIDE.try_with(|inside| inside.get()).unwrap_or(true) {
            // The program enters a hook: a signal handler held back for this place runs
            // first, outside the guard ([`on_each_entry`]).
            let f = EACH_ENTRY.load(Ordering::Relaxed);
            if f != 0 {
                // SAFETY: set by [`on_each_entry`] to a plain `extern "C" fn()`.
                let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
                f();
            }
        }
        INSIDE
            .try_with(|inside| {
                if inside.get() {
                    None
                } else {
                    inside.set(true);
                    let _ = DEPTH.try_with(|d| d.set(d.get() + 1));
                    let _ = PAST_EVENT.try_with(|past| past.set(false));
                    if ENTRY_AWAITED.load(Ordering::Relaxed)
                        && ENTRY_AWAITED.swap(false, Ordering::SeqCst)
                    {
                        let f = ON_ENTRY.load(Ordering::SeqCst);
                        if f != 0 {
                            // SAFETY: set by [`at_next_entry`] to a plain `extern "C" fn()`.
                            let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
                            f();
                        }
                    }
                    Some(Guard(()))
                }
            })
            .ok()
            .flatten()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let depth = DEPTH
            .try_with(|d| d.replace(d.get().saturating_sub(1)))
            .unwrap_or(0);
        crate::baton::leaving(depth);
        let _ = INSIDE.try_with(|inside| inside.set(false));
        if DEFERRED.swap(false, Ordering::SeqCst) {
            let f = ON_LEAVE.load(Ordering::SeqCst);
            if f != 0 {
                // SAFETY: set by [`on_leave`] to a plain `extern "C" fn()`.
                let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
                f();
            }
        }
        if depth <= 1 {
            let f = AT_LEAVE.try_with(|f| f.replace(0)).unwrap_or(0);
            if f != 0 {
                // SAFETY: set by [`at_this_leave`] to a plain `extern "C" fn()`.
                let f: extern "C" fn() = unsafe { std::mem::transmute(f) };
                f();
            }
        }
    }
}

/// Runs `f` as the hook this thread is in returns to the program, outside the guard (a
/// signal handler is called from here).
pub fn at_this_leave(f: extern "C" fn()) {
    let _ = AT_LEAVE.try_with(|at| at.set(f as *const () as usize));
}

/// Something (a signal handler the record ran outside any hooked call) waits for this thread
/// to leave the hook it is in.
static DEFERRED: AtomicBool = AtomicBool::new(false);
/// What runs then.
static ON_LEAVE: AtomicUsize = AtomicUsize::new(0);

/// Asks for `on_leave`'s function to run when the current hook returns to the program.
pub fn defer() {
    DEFERRED.store(true, Ordering::SeqCst);
}

/// Something (a kill made by a signal handler inside a hook, to be told to the GD) waits for
/// a thread to enter a hook from outside.
static ENTRY_AWAITED: AtomicBool = AtomicBool::new(false);
/// What runs then, inside the guard.
static ON_ENTRY: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` once, inside the guard, when a thread next enters a hook from outside any (it may
/// ask again). Atomics only: callable from a signal handler.
pub fn at_next_entry(f: extern "C" fn()) {
    ON_ENTRY.store(f as *const () as usize, Ordering::SeqCst);
    ENTRY_AWAITED.store(true, Ordering::SeqCst);
}

/// What runs at each entry of the program into a hook, before the guard is taken (0: nothing).
static EACH_ENTRY: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` at each entry of the program into a hook (a thread outside every hook entering
/// one), before the guard is taken: `crate::hooks::signal::at_entry`.
pub fn on_each_entry(f: extern "C" fn()) {
    EACH_ENTRY.store(f as *const () as usize, Ordering::SeqCst);
}

/// Sets the function that [`defer`] runs.
pub fn on_leave(f: extern "C" fn()) {
    ON_LEAVE.store(f as *const () as usize, Ordering::SeqCst);
}

/// Whether this thread is inside a hook now (for a signal handler: the signal came during a
/// hooked call).
pub fn inside() -> bool {
    INSIDE.try_with(|inside| inside.get()).unwrap_or(true)
}

/// The hook this thread is in has logged its event (record): what comes after, until the hook
/// returns, the program sees as coming after the call.
pub fn event_done() {
    let _ = PAST_EVENT.try_with(|past| past.set(true));
}

/// Where the signals' ring of notes stood when the real call of the hook being recorded
/// returned (`usize::MAX`: not marked): see [`call_returned`].
static RETURNED_AT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Record: the real call of a send or close has returned, its event is not logged yet. A
/// delivery that comes from now on comes after the call as the program sees it (not in it),
/// and its line goes after the event's: a SIGCHLD raised by a child that read the bytes just
/// sent and exited is not a cause of that send (noted before it, the send needed the child's
/// end, which needed the send: the analysis found a cycle in vsftpd's sessions).
pub fn call_returned() {
    RETURNED_AT.store(crate::signals::notes_pushed(), Ordering::SeqCst);
    event_done();
}

/// Takes the mark [`call_returned`] left: the notes before it go before the event's line.
pub fn take_returned_mark() -> usize {
    RETURNED_AT.swap(usize::MAX, Ordering::SeqCst)
}

/// Whether the hook this thread is in has logged (record) or replayed its event.
pub fn past_event() -> bool {
    PAST_EVENT.try_with(|past| past.get()).unwrap_or(false)
}

/// Whether this thread is inside a hook that has not logged its event yet: a signal that comes
/// now comes during the call, as the program sees it. One that comes after the event's line,
/// before the hook returns, is taken by the program right after the call, as in its
/// computation, and is noted so: noted as "in a call", replay would run its handler in the
/// program's next call, after the program had acted on a flag the handler had not set yet
/// (vsftpd's session parent read its child's EOF, found no SIGCHLD flag and wrote "500 OOPS"
/// to its client where the record had exited).
pub fn inside_before_event() -> bool {
    inside() && !PAST_EVENT.try_with(|past| past.get()).unwrap_or(false)
}

/// In a child forked by the program's signal handler that interrupted a hook: the hook is the
/// parent's, not the child's. The child runs its program outside any hook from now on (until
/// its handler returns into that hook's frame, which leaves the guard as usual). Inheriting it
/// held, the child lived its whole life inside the guard: postgres's walwriter, forked from the
/// postmaster's SIGCHLD handler, had its SIGTERM handler put off until a hook returned, which
/// never came, and the postmaster's shutdown waited for it until `runuser` killed it.
pub fn forked_out_of_hook() {
    let _ = INSIDE.try_with(|inside| inside.set(false));
    let _ = PAST_EVENT.try_with(|past| past.set(false));
}

/// Leaves the guard held by the current hook for the time of `f` (replay runs a signal
/// handler the record ran outside any hooked call: its calls are hooked as they were then).
pub fn outside<R>(f: impl FnOnce() -> R) -> R {
    let was = INSIDE
        .try_with(|inside| inside.replace(false))
        .unwrap_or(false);
    let r = f();
    let _ = INSIDE.try_with(|inside| inside.set(was));
    r
}

/// Holds the guard for the time of `f` without entering a hook (replay waits for a signal at
/// the program's entry into a hook, before the hook's own guard: the LD's calls then must not
/// be hooked).
pub fn held<R>(f: impl FnOnce() -> R) -> R {
    let was = INSIDE
        .try_with(|inside| inside.replace(true))
        .unwrap_or(true);
    let r = f();
    let _ = INSIDE.try_with(|inside| inside.set(was));
    r
}

/// How many guards this thread holds now (0: outside every hook).
pub fn depth() -> u32 {
    DEPTH.try_with(|d| d.get()).unwrap_or(0)
}

/// This thread's kernel id, cached (reset after fork by [`forget_tid`]).
pub fn tid() -> i32 {
    TID.try_with(|t| {
        if t.get() == 0 {
            t.set(crate::sys::gettid());
        }
        t.get()
    })
    .unwrap_or_else(|_| crate::sys::gettid())
}

/// Forgets the cached tid (in a forked child, the thread has a new one).
pub fn forget_tid() {
    let _ = TID.try_with(|t| t.set(0));
}
