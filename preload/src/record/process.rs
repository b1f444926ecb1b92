//! Record of the process family: the image's start (or exec), fork, posix_spawn and exit
//! events, and what the GD is told about processes without an event (a child reaped, a
//! signal sent to another recorded process).

use crate::ld::Ld;
use crate::sys;
use ddbx_wire::history::Record;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::LdToGd;
use libc::{c_int, pid_t};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;

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

/// Kills made by the program's signal handlers inside a hook, where the LD cannot talk to the
/// GD (it may be in the middle of a message): `pid << 8 | sig`, 0 for a free slot.
static KILLS_IN_HANDLERS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

/// A kill of `pid` with `sig` made by a signal handler of the program that interrupted a hook
/// (`timeout` relays the SIGTERM it gets to its child from its handler, while it waits for the
/// child in `sigsuspend`): kept until a hook is next entered, which tells the GD
/// ([`tell_kills_made_in_handlers`]). Untold, the child's death would count as one from outside
/// the session, and its replay would end it at its history's end, before the relay, and
/// `timeout` with it (a script's `kill` of its server then failed: "No such process").
/// Atomics only: called from a signal handler.
pub fn kill_in_handler(pid: pid_t, sig: c_int) {
    if pid <= 0 || !(1..=255).contains(&sig) {
        return;
    }
    let packed = (pid as u64) << 8 | sig as u64;
    if KILLS_IN_HANDLERS
        .iter()
        .any(|slot| slot.compare_exchange(0, packed, SeqCst, SeqCst).is_ok())
    {
        crate::guard::at_next_entry(kills_told_at_entry);
    }
}

/// At a hook's entry after [`kill_in_handler`]: tells the GD, unless the LD may not talk to it
/// now (inside its own signal handler), when the next entry will.
extern "C" fn kills_told_at_entry() {
    match crate::ld::running() {
        Some(ld) if !crate::signals::in_signal_context() => tell_kills_made_in_handlers(ld),
        Some(_) => crate::guard::at_next_entry(kills_told_at_entry),
        None => {}
    }
}

/// Tells the GD the kills [`kill_in_handler`] kept.
fn tell_kills_made_in_handlers(ld: &mut Ld) {
    for slot in &KILLS_IN_HANDLERS {
        let packed = slot.swap(0, SeqCst);
        if packed != 0 {
            let msg = LdToGd::Signal {
                actor: ld.actor,
                pid: (packed >> 8) as pid_t,
                sig: (packed & 0xff) as c_int,
            };
            ld.send(&msg);
        }
    }
}
