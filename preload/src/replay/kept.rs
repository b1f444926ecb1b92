//! Replay: deliveries kept for the program's next hooked call, or its next sleep.
//!
//! A delivery the record made inside a hooked call, whose signal arrives while the program
//! sleeps or computes outside any hook, waits for the program's next hooked call (or sleep),
//! where it runs as the record's ran, inside a call (`super::signals`). A delivery found
//! waiting for a signal that merged into an earlier arrival is looked at again there too.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// An arrival kept for the program's next hooked call (`deliver_due_forcing` in
/// `super::signals`).
static KEPT: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is in `asleep`'s look (`super::signals`) at what is due: a sleep, which no
    /// guard holds, counts as the hooked call a delivery the record took in a call was kept
    /// for.
    static IN_SLEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This thread is in the hook of a clock read or a random draw ([`instant`]).
    static IN_INSTANT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, the hook of a call that reads a value and returns at once (a clock, random
/// bytes): no place for a delivery the record took "in a call" (those are blocking calls), and
/// a signal that lands in it lands, as the program sees it, in its computation. memcached's
/// replay ran the SIGTERM handler the record ran in `epoll_wait` inside a clock read before
/// it, and its main loop, seeing the flag, closed its listener instead of waiting (1 test run
/// of 5 in a full suite).
pub fn instant<R>(f: impl FnOnce() -> R) -> R {
    let was = IN_INSTANT.try_with(|i| i.replace(true)).unwrap_or(false);
    let r = f();
    let _ = IN_INSTANT.try_with(|i| i.set(was));
    r
}

/// Whether this thread is in the hook of a clock read or a random draw ([`instant`]).
pub fn in_instant() -> bool {
    IN_INSTANT.try_with(|i| i.get()).unwrap_or(false)
}

/// Hooked calls that return at once and are no event: not where the record took a signal
/// "in a call" (it takes them in calls that block), so an arrival kept for the program's
/// next call waits for a later one (`sig_forkreap term`'s parent, whose SIGCHLD the record
/// took in its next `ppoll`, ran the handler in the `kill` before it; the handler waited for
/// the child that kill was to end, 1 replay in 3 under load).
const INSTANT: [&str; 16] = [
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "fileno",
    "fileno_unlocked",
    "fopen",
    "fopen64",
    "kill",
    "listen",
    "pipe",
    "pipe2",
    "socket",
    "socketpair",
];

/// Keeps what is due for the program's next hooked call (`at_call` in `super::signals`).
pub fn keep() {
    KEPT.store(true, SeqCst);
}

/// Whether this thread is in `asleep`'s look at what is due.
pub fn in_sleep() -> bool {
    IN_SLEEP.try_with(|s| s.get()).unwrap_or(false)
}

/// Whether a delivery is kept, taking it: the caller delivers what is due now.
#[inline]
pub fn take() -> bool {
    KEPT.load(Relaxed) && KEPT.swap(false, SeqCst)
}

/// Whether a delivery is kept for a call to `name` (not an [`INSTANT`] one).
#[inline]
pub fn for_call(name: &str) -> bool {
    KEPT.load(Relaxed) && !INSTANT.contains(&name)
}

/// Runs `f` as this thread's look, from a sleep, at what is due ([`in_sleep`]).
pub fn sleeping<R>(f: impl FnOnce() -> R) -> R {
    let _ = IN_SLEEP.try_with(|s| s.set(true));
    let r = f();
    let _ = IN_SLEEP.try_with(|s| s.set(false));
    r
}
