//! Replay: a sleep of the program (`crate::hooks::sleep`) goes on through an interruption
//! that ran no handler of the program (the LD's handler kept the arrival for a later call).

use libc::{c_int, timespec};

/// Makes one sleep call: `call(left)` sleeps for (or until) `left` and returns the error
/// number, 0 when it slept to its end, with what is left of a relative sleep in `left`.
/// In replay, an interruption that ran no handler of the program is slept through.
pub fn asleep(left: &mut timespec, mut call: impl FnMut(&mut timespec) -> c_int) -> c_int {
    if crate::signals::mode() != crate::signals::REPLAY {
        return call(left);
    }
    loop {
        let ran = crate::signals::handlers_run();
        let err = call(left);
        if err != libc::EINTR || crate::signals::handlers_run() != ran {
            return err;
        }
    }
}
