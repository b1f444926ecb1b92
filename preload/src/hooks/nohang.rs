//! Non-blocking waits (`WNOHANG`): which child, if any, a wait returned depends on when each
//! child ended, and a SIGCHLD handler's `waitpid(-1, WNOHANG)` loop decides from it (nginx's
//! master, postgres's postmaster, gunicorn's arbiter). Record logs the outcome as a value line
//! (`~w3`: child number 3; `~w0`: none yet); replay waits for exactly that child (blocking)
//! or returns 0 without asking the kernel, so the handler reaps what the record's reaped.
//! Children are named by their number (as in `Fork`), which this image learns at each fork.
//!
//! A wait the record did not log (more waits in replay than in the record, a child this image
//! did not fork) is made as asked.

use super::values::values_ld;
use crate::{record, replay};
use ddbx_wire::history::value::Value;
use ddbx_wire::proto::Mode;
use libc::{c_int, pid_t};

/// After a fork returned `pid` in this image: remembers the child's number. Returns `pid`.
pub fn forked(pid: pid_t) -> pid_t {
    if pid > 0
        && let Some(ld) = crate::ld::running()
        && ld.fork_index > 0
    {
        crate::signals::add_kid(pid, ld.fork_index);
    }
    pid
}

/// A wait for `pid` (as waitpid takes it) with `options`; `call(pid, options)` makes the real
/// one.
pub fn wait(pid: pid_t, options: c_int, mut call: impl FnMut(pid_t, c_int) -> pid_t) -> pid_t {
    if options & libc::WNOHANG == 0 {
        return call(pid, options);
    }
    let Some(ld) = values_ld() else {
        return call(pid, options);
    };
    match ld.mode {
        Mode::Record => {
            let r = call(pid, options);
            let child = match r {
                0 => Some(0),
                pid if pid > 0 => Some(crate::signals::kid_index(pid)).filter(|i| *i > 0),
                _ => None,
            };
            if let Some(child) = child {
                let e = crate::sys::errno();
                record::values::log(ld, &Value::Reaped { child });
                crate::sys::set_errno(e);
            }
            r
        }
        Mode::Replay => {
            let Some(child) = replay::values::take_reaped(ld) else {
                return call(pid, options);
            };
            let e = crate::sys::errno();
            ld.log_value(&Value::Reaped { child });
            crate::sys::set_errno(e);
            if child == 0 {
                return 0;
            }
            match crate::signals::kid_pid(child) {
                // The recorded child, however long it takes to end.
                Some(kid) => call(kid, options & !libc::WNOHANG),
                None => call(pid, options),
            }
        }
    }
}
