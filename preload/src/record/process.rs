//! Record of the process family: the image's start (or exec), fork, posix_spawn and exit
//! events, and what the GD is told about processes without an event (a child reaped, a
//! signal sent to another recorded process).

use crate::ld::Ld;
use crate::sys;
use ddbx_wire::history::Record;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::LdToGd;
use libc::{c_int, pid_t};

/// The image's first event (`Start`, or `Exec` for an exec'd image).
pub fn start(ld: &mut Ld, first: &Record) {
    ld.emit(first);
}

/// After a fork, in the parent: the fork of child number `ld.fork_index`.
pub fn fork(ld: &mut Ld) {
    ld.emit(&Record::Fork {
        index: ld.fork_index,
    });
}

/// A posix_spawn of child number `index`.
pub fn spawn(ld: &mut Ld, index: u32) {
    ld.emit(&Record::Spawn { index });
}

/// Before an exec: optimal tracing writes out what it still holds (the new image starts with
/// an empty queue).
pub fn exec(ld: &mut Ld) {
    ld.flush_values();
    ld.drain(true);
}

/// The exit of this process with `status` (its last event).
pub fn exit(ld: &mut Ld, status: c_int) {
    super::peers::exiting(ld);
    ld.emit(&Record::Exit { status });
    ld.drain(true);
}

/// A blocking wait reaped `child`, which ended with `status` (not an event: the GD notes which
/// child, since a halting replay needs the child's end before the parent's next event, and how
/// it ended, which nothing else says of a child killed by a signal). Replay tells it too: a
/// child killed there by a signal its record does not have stops the replay.
pub fn reaped(ld: &mut Ld, child: pid_t, status: Option<ExitStatus>) {
    let msg = LdToGd::Reaped {
        actor: ld.actor,
        events: ld.events(),
        pid: child,
        status,
    };
    ld.send(&msg);
}

/// The program sends signal `sig` to process `pid` (not an event: the GD notes it on the
/// receiving actor, whose replay then waits for its killer).
pub fn kill(ld: &mut Ld, pid: pid_t, sig: c_int) {
    let saved = sys::errno();
    let msg = LdToGd::Signal {
        actor: ld.actor,
        pid,
        sig,
    };
    ld.send(&msg);
    sys::set_errno(saved);
}
