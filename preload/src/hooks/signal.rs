//! Signals one recorded process sends another: kill(2).
//!
//! A process killed by a signal has no `Exit` record; replay otherwise ends it where its
//! history ends. When the signal came from another recorded process (socat's handler ending
//! its EXEC child, a script stopping its server), that is too early or needless: the sender's
//! replay sends it again at the same point of its own history. So while recording, each kill
//! is told to the GD, which notes it on the receiving actor in the manifest, and replay lets
//! such a process wait for its killer.

use super::{active, hook};
use crate::{real, record, sys};
use ddbx_wire::proto::Mode;
use libc::{c_int, pid_t};

hook! {
    /// kill(2): noted for the GD while recording, then sent as asked.
    fn kill(pid: pid_t, sig: c_int) -> c_int {
        if pid > 0
            && sig > 0
            && pid != sys::getpid()
            && let Some(ld) = active()
            && ld.mode == Mode::Record
        {
            record::process::kill(ld, pid, sig);
        }
        // SAFETY: no pointer arguments.
        unsafe { real::kill(pid, sig) }
    }
}
