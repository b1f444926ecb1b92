//! Reaps made by a wait that ran inside one of our hooks: a SIGCHLD handler (bash's) that
//! interrupted a blocking call the LD was making for the program, and reaped a child. The hook
//! it interrupted may be talking to the GD, so the reap is only noted here (lock-free, no
//! allocation: a signal handler's context) and told to the GD with the actor's next event,
//! after the events done so far: the event that was under way needs the child's end.

use super::Ld;
use ddbx_wire::manifest::ExitStatus;
use ddbx_wire::proto::LdToGd;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

const SLOTS: usize = 64;
static PIDS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// The wait status of each.
static STATUSES: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// A wait inside a hook reaped `pid`, which ended with the wait status `status` (more than
/// `SLOTS` before the next event are dropped).
pub fn defer(pid: i32, status: i32) {
    let i = COUNT.fetch_add(1, Ordering::AcqRel);
    if i < SLOTS {
        STATUSES[i].store(status, Ordering::Relaxed);
        PIDS[i].store(pid, Ordering::Release);
    } else {
        COUNT.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Forgets the parent's notes (a forked child has reaped nothing).
pub fn forget() {
    COUNT.store(0, Ordering::Release);
}

impl Ld {
    /// Tells the GD the reaps noted by [`defer`] (before the next event is counted).
    pub fn send_deferred_reaps(&mut self) {
        let n = COUNT.swap(0, Ordering::AcqRel).min(SLOTS);
        for i in 0..n {
            let pid = PIDS[i].load(Ordering::Acquire);
            let s = STATUSES[i].load(Ordering::Relaxed);
            let status = if libc::WIFEXITED(s) {
                ExitStatus::Exited(libc::WEXITSTATUS(s))
            } else {
                ExitStatus::Signaled(libc::WTERMSIG(s))
            };
            let msg = LdToGd::Reaped {
                actor: self.actor,
                events: self.events(),
                pid,
                status: Some(status),
            };
            self.send(&msg);
        }
    }
}
