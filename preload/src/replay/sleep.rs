//! Replay: the program asleep in one of the sleep hooks (`crate::hooks::sleep`), and the
//! sleep that goes on through an interruption that ran no handler of the program (the LD's
//! handler kept the arrival for a later call).

use libc::{c_int, timespec};
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;

/// Replay: how many threads sleep in a sleep hook now (a handler that comes sees it).
static SLEEPING: AtomicU32 = AtomicU32::new(0);

/// Whether the program sleeps in a sleep hook now (for the LD's signal handler).
pub fn sleeping() -> bool {
    SLEEPING.load(SeqCst) > 0
}

/// Makes one sleep call: `call(left)` sleeps for (or until) `left` and returns the error
/// number, 0 when it slept to its end, with what is left of a relative sleep in `left`.
/// In replay, an interruption that ran no handler of the program is slept through.
pub fn asleep(left: &mut timespec, mut call: impl FnMut(&mut timespec) -> c_int) -> c_int {
    if crate::signals::mode() != crate::signals::REPLAY {
        return call(left);
    }
    // A delivery kept during an earlier sleep runs now: a loop that sleeps until its
    // handler has run would otherwise sleep for ever.
    let _ = super::signals::at_call();
    loop {
        let ran = crate::signals::handlers_run();
        SLEEPING.fetch_add(1, SeqCst);
        let err = call(left);
        SLEEPING.fetch_sub(1, SeqCst);
        if err != libc::EINTR || crate::signals::handlers_run() != ran {
            return err;
        }
    }
}
