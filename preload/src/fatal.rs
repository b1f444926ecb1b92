//! Replay: the signals whose default action ends the process, held until the history's end
//! (see [`hold_default_fatal`]). Atomics and raw system calls only, like `crate::signals`.

use libc::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// The asynchronous signals whose default action ends the process and that another process
/// (a script's `kill`, `timeout`, a terminal) typically sends.
pub const DEFAULT_FATAL: [c_int; 7] = [
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

/// Set once a replay's history is loaded ([`hold_default_fatal`]): [`hold`] holds from then
/// on, whether or not the replay orders the program's handlers (a replay of an optimal trace
/// does not, and a script's `kill` still must not end a process before its history's end).
static REPLAYING: AtomicBool = AtomicBool::new(false);

/// Replay, once the history is loaded (`events_left`: it has events to replay): the signals
/// of [`DEFAULT_FATAL`] the program leaves to their default action are kept blocked while the
/// history has events left, so that one that comes early (the replay of its sender ran ahead)
/// stays pending: the process dies of it where the record's died, in its first call after its
/// last event (`preload/src/replay/cursor.rs`), not wherever the signal found it (haproxy died
/// 12 events before the end of its history, its last health checks unmade). Blocked, not
/// caught: a handler would make an unhooked sleep or read fail with EINTR, which the record's
/// process never saw. The program's own masks keep them blocked (`crate::hooks::mask`, and
/// `sigsuspend` before the history's end).
///
/// An exec'd image starts with the mask the image before it had, the signals that image held
/// still blocked: they are held here too, events left or not, so that they are let go where
/// this history ends (a `sleep` killed by the script's `kill` as it exec'd had nothing left
/// to replay, and waited for ever with the signal pending).
pub fn hold_default_fatal(events_left: bool) {
    REPLAYING.store(true, SeqCst);
    let inherited = crate::sys::block_signals(0);
    for sig in DEFAULT_FATAL {
        // SAFETY: plain data, filled by the query.
        let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a query into our local.
        if unsafe { crate::real::sigaction(sig, std::ptr::null(), &mut cur) } != 0
            || cur.sa_sigaction != libc::SIG_DFL
        {
            continue;
        }
        let bit = 1u64 << (sig - 1);
        if inherited & bit != 0 {
            HELD.fetch_or(bit, SeqCst);
        } else if events_left {
            hold(sig);
        }
    }
}

/// Blocks `sig` if replay holds it (the program just left it to its default action, and the
/// history has events left).
pub fn hold(sig: c_int) {
    if REPLAYING.load(SeqCst) && DEFAULT_FATAL.contains(&sig) {
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

/// The signals the LD holds now (bit `sig - 1`): what the program's own masks keep blocked
/// (`crate::hooks::mask`).
pub fn held() -> u64 {
    HELD.load(SeqCst)
}

/// Replay: the history has no event left (set once, by [`at_end`]).
static AT_END: AtomicBool = AtomicBool::new(false);

/// The history's last event has happened: the recorded process was killed somewhere after
/// it, in computation or in a call. The held signals stay blocked: one that comes now still
/// waits for the process's next call ([`before_blocking`], or the event the history does not
/// have, `preload/src/replay/cursor.rs`), so that the computation the record made after its
/// last event (printing what it had just read) is made again, however early the sender's
/// replay sends it (released here, term_early's child died before printing its last line
/// when the parent's kill came in that moment: 1 CI run in about 30).
///
/// A process that never calls again (a loop, a call we do not hook) would never die of it:
/// the GD, when every process is at its end, sends it its recorded signal and then SIGCONT,
/// which this installs a catcher for (if the program left SIGCONT to its default action).
pub fn at_end() {
    if AT_END.swap(true, SeqCst) || HELD.load(SeqCst) == 0 {
        return;
    }
    // SAFETY: plain data, filled by the query.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a query into our local.
    if unsafe { crate::real::sigaction(libc::SIGCONT, std::ptr::null(), &mut cur) } != 0
        || cur.sa_sigaction != libc::SIG_DFL
    {
        return;
    }
    // SAFETY: plain data; every field set below or zero.
    let mut wake: libc::sigaction = unsafe { std::mem::zeroed() };
    wake.sa_sigaction = woken as extern "C" fn(c_int) as usize;
    wake.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid action whose handler only touches atomics and makes system calls.
    unsafe { crate::real::sigaction(libc::SIGCONT, &wake, std::ptr::null_mut()) };
}

/// Whether the history's last event has happened ([`at_end`]).
pub fn past_the_end() -> bool {
    AT_END.load(SeqCst)
}

/// SIGCONT at the end of the history: the GD ends the replay (see [`at_end`]).
extern "C" fn woken(_sig: c_int) {
    let saved = crate::sys::errno();
    release_held();
    crate::sys::set_errno(saved);
}

/// The program is about to block in a call that is not an event (a sleep, `pause`, a wait
/// for a child, a readiness wait on no channel): past the history's end, this is the call
/// where the record's process was killed, so the held signals act now.
pub fn before_blocking() {
    if AT_END.load(SeqCst) && HELD.load(SeqCst) != 0 {
        release_held();
    }
}

/// The held signals are unblocked: one that already came ends the process now.
pub fn release_held() {
    let bits = HELD.swap(0, SeqCst);
    if bits != 0 {
        let old = crate::sys::block_signals(0);
        crate::sys::set_signal_mask(old & !bits);
    }
}
