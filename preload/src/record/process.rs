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

/// The program sends signal `sig` to process `pid`, or to every process of the group `-pid`
/// (`pid` < -1; 0: the sender's own group), as the kernel knows them. Not an event: the GD
/// notes it on each receiving actor, whose replay then waits for its killer.
pub fn kill(ld: &mut Ld, pid: pid_t, sig: c_int) {
    let saved = sys::errno();
    targets(pid, |pid| {
        ld.send(&LdToGd::Signal {
            actor: ld.actor,
            pid,
            sig,
        })
    });
    sys::set_errno(saved);
}

/// Calls `f` with each process a kill of `pid` reaches but the sender: `pid` itself, or the
/// members of a process group (`pid` < -1, or 0 for the sender's own). Allocation-free: a
/// signal handler's kill comes here too.
pub fn targets(pid: pid_t, mut f: impl FnMut(pid_t)) {
    let group = match pid {
        // SAFETY: no pointer arguments.
        0 => (unsafe { libc::syscall(libc::SYS_getpgid, 0) }) as pid_t,
        p if p < -1 => -p,
        p => return f(p),
    };
    let me = sys::getpid();
    group_members(group, |p| {
        if p != me {
            f(p)
        }
    });
}

/// Calls `f` with the pid of every process in the process group `pgrp`, read from `/proc`
/// now, before the kill (a process it ends may be reaped before the GD could look).
fn group_members(pgrp: pid_t, mut f: impl FnMut(pid_t)) {
    let dir = sys::open(
        b"/proc",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        0,
    );
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most buf.len() bytes into buf.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut at = 0;
        while at + 19 < n as usize {
            // A linux_dirent64: inode (8), offset (8), record length (2), type (1), name.
            let len = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if len == 0 {
                break;
            }
            let name = &buf[at + 19..(at + len).min(n as usize)];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            if let Some(pid) = std::str::from_utf8(name).ok().and_then(|s| s.parse().ok())
                && process_group(pid) == Some(pgrp)
            {
                f(pid);
            }
            at += len;
        }
    }
    sys::close(dir);
}

/// The process group of process `pid`, from `/proc/<pid>/stat` (after the command's closing
/// parenthesis: state, ppid, pgrp).
fn process_group(pid: pid_t) -> Option<pid_t> {
    let mut path = [0u8; 32];
    let mut at = b"/proc/".len();
    path[..at].copy_from_slice(b"/proc/");
    let digits = pid.checked_ilog10()? as usize + 1;
    for (i, d) in path[at..at + digits].iter_mut().rev().enumerate() {
        *d = b'0' + (pid / 10_i32.pow(i as u32) % 10) as u8;
    }
    at += digits;
    path[at..at + 5].copy_from_slice(b"/stat");
    let fd = sys::open(&path[..at + 5], libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let n = sys::read(fd, &mut buf);
    sys::close(fd);
    let text = buf.get(..usize::try_from(n).ok()?)?;
    let after = &text[text.iter().rposition(|b| *b == b')')? + 1..];
    std::str::from_utf8(after)
        .ok()?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Kills made by the program's signal handlers inside a hook, where the LD cannot talk to the
/// GD (it may be in the middle of a message): `pid << 8 | sig`, 0 for a free slot.
static KILLS_IN_HANDLERS: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];

/// A kill of `pid` with `sig` made by a signal handler of the program that interrupted a hook
/// (`timeout` relays the SIGTERM it gets to its child from its handler, while it waits for the
/// child in `sigsuspend`): kept until a hook is next entered, which tells the GD
/// ([`tell_kills_made_in_handlers`]). Untold, the child's death would count as one from outside
/// the session, and its replay would end it at its history's end, before the relay, and
/// `timeout` with it (a script's `kill` of its server then failed: "No such process"). A kill
/// of a process group is kept for each member (`timeout` then signals its own group: the
/// server's workers die of it). Atomics and raw system calls only: called from a signal
/// handler.
pub fn kill_in_handler(pid: pid_t, sig: c_int) {
    if pid == -1 || !(1..=255).contains(&sig) {
        return;
    }
    let mut kept = false;
    targets(pid, |pid| {
        let packed = (pid as u64) << 8 | sig as u64;
        kept |= KILLS_IN_HANDLERS
            .iter()
            .any(|slot| slot.compare_exchange(0, packed, SeqCst, SeqCst).is_ok());
    });
    if kept {
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
