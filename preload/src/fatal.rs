//! Replay: the signals whose default action ends the process, held until the history's end
//! (see [`hold_default_fatal`]). Atomics and raw system calls only, like `crate::signals`.

use libc::c_int;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;

/// The asynchronous signals whose default action ends the process and that another process
/// (a script's `kill`, `timeout`, a terminal) typically sends.
const DEFAULT_FATAL: [c_int; 7] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Replay: the default-fatal signals the LD keeps blocked (bit `sig - 1`).
static HELD: AtomicU64 = AtomicU64::new(0);

/// Replay, once the history is loaded (`events_left`: it has events to replay): the signals
/// of [`DEFAULT_FATAL`] the program leaves to their default action are kept blocked while the
/// history has events left, so that one that comes early (the replay of its sender ran ahead)
/// stays pending: the process dies of it where the record's died, in its first call after its
/// last event (`preload/src/replay/cursor.rs`), not wherever the signal found it (haproxy died
/// 12 events before the end of its history, its last health checks unmade). Blocked, not
/// caught: a handler would make an unhooked sleep or read fail with EINTR, which the record's
/// process never saw. A program that unblocks one itself (its own `sigprocmask`,
/// `sigsuspend`) takes it at once, as before.
pub fn hold_default_fatal(events_left: bool) {
    if !events_left {
        return;
    }
    for sig in DEFAULT_FATAL {
        // SAFETY: plain data, filled by the query.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a query into our local.
        if unsafe { crate::real::sigaction(sig, std::ptr::null(), &mut cur) } == 0
            && cur.sa_sigaction == libc::SIG_DFL
        {
            hold(sig);
        }
    }
}

/// Blocks `sig` if replay holds it (the program just left it to its default action, and the
/// history has events left).
pub fn hold(sig: c_int) {
    if crate::signals::mode() == crate::signals::REPLAY && DEFAULT_FATAL.contains(&sig) {
        let bit = 1u64 << (sig - 1);
        HELD.fetch_or(bit, SeqCst);
        crate::sys::block_signals(bit);
    }
}

/// Unblocks `sig` if replay held it (the program handles or ignores it now).
pub fn let_go(sig: c_int) {
    let bit = 1u64 << (sig - 1);
    if HELD.fetch_and(!bit, SeqCst) & bit != 0 {
        let old = crate::sys::block_signals(0);
        crate::sys::set_signal_mask(old & !bit);
    }
}

/// The history has no event left: the held signals are unblocked, but those that already
/// came only if `pending_too` (the process is in its first call after its last event, where
/// the record's died; before that call it still computes what the record's computed).
pub fn release_held(pending_too: bool) {
    let mut bits = HELD.load(SeqCst);
    if !pending_too {
        bits &= !crate::sys::pending_signals();
    }
    let bits = HELD.fetch_and(!bits, SeqCst) & bits;
    if bits != 0 {
        let old = crate::sys::block_signals(0);
        crate::sys::set_signal_mask(old & !bits);
    }
}
