//! Replay of select, poll and epoll: the recorded ready set, once those fds really are ready.
//!
//! The real readiness call is not made: the kernel's answer (and, for edge-triggered epoll, its
//! memory of what it already reported) does not matter; the history's does. Under optimal
//! tracing a ready set that was not logged is the real call without timeout, which must
//! report one fd as the record did.

use super::cursor::{self, unreachable_record};
use super::held;
use crate::ld::Ld;
use crate::readiness::ReadinessCall;
use crate::sys;
use ddbx_wire::history::{Call, ReadyFd, WaitCall};
use ddbx_wire::{Events, Record};
use libc::c_int;

/// Replays one readiness call: reports the recorded ready set in the program's structures (or
/// fails the call as recorded).
pub fn wait<C: ReadinessCall>(ld: &mut Ld, call: &mut C) -> c_int {
    if call.may_be_untraced() && untraced_next(ld) {
        let r = call.call_without_timeout();
        let err = sys::errno();
        let ready = match call.ready_fds(r) {
            Ok(ready) => ready,
            Err(what) => ld.unsupported(what),
        };
        untraced_done(ld, C::KIND, r, err, ready);
        return r;
    }
    let what = call.describe();
    match next_ready_set(ld, C::KIND, &what, call.timeout_us()) {
        Err(err) => {
            sys::set_errno(err);
            -1
        }
        Ok(set) => match call.report(&set, &what) {
            Ok(count) => {
                done(ld, C::KIND, set);
                count
            }
            Err(found) => cursor::diverge(ld, &found),
        },
    }
}

/// The next record, which must be a ready set of `call` (or its failure). `Err(errno)` for a
/// recorded failure (already advanced past); `Ok(fds)` once every recorded fd is ready (the
/// caller reports them and then calls [`done`]).
fn next_ready_set(
    ld: &mut Ld,
    call: WaitCall,
    what: &str,
    timeout_us: Option<u64>,
) -> Result<Vec<ReadyFd>, c_int> {
    if ld.exits_next() {
        // The record's process exited because of a signal that came during this wait (its
        // closes on the way out, if any, come after the handler ran).
        cursor::wait_for_a_signal(ld);
        return Err(libc::EINTR);
    }
    ld.in_wait = true;
    let rec = cursor::follow(
        ld,
        |r| match r {
            Record::Ready { call: c, .. } => *c == call,
            Record::Fail {
                call: Call::Wait, ..
            } => true,
            _ => false,
        },
        || what.to_string(),
    );
    ld.in_wait = false;
    match rec {
        Record::Ready { fds, .. } => {
            if fds.is_empty()
                && let Some(us) = timeout_us
            {
                // The record timed out: so does the replay, after as long, so that the
                // program's own clock (an event loop's timers) agrees with what happened.
                sys::sleep_us(us);
            }
            for f in &fds {
                if f.ev.0 & (Events::IN | Events::HUP | Events::RDHUP) != 0
                    && super::external::is_outside(ld, f.fd)
                {
                    super::external::feed_next(ld, f.fd);
                }
                // A listening socket is not waited for: its accept waits for its own
                // connection, which another process may have taken from the backlog.
                if !super::accept::listener_ready(ld, f.fd, f.ev) {
                    wait_until_ready(ld, f.fd, f.ev);
                }
            }
            Ok(fds)
        }
        Record::Fail { err, .. } => {
            cursor::advance(ld, &rec);
            Err(err.0)
        }
        _ => unreachable_record(ld),
    }
}

/// Optimal tracing: whether the next readiness call's outcome was not logged (replay then
/// makes the real call without timeout and reports what it says, see [`untraced_done`]).
fn untraced_next(ld: &mut Ld) -> bool {
    if ld.trace.is_none() {
        return false;
    }
    cursor::gate(ld);
    matches!(ld.next_record(), Some(Record::Untraced))
}

/// An untraced readiness call returned `r` (errno `err`) with these fds: the record saw one
/// readable fd, so must the replay.
fn untraced_done(ld: &mut Ld, call: WaitCall, r: c_int, err: c_int, fds: Vec<ReadyFd>) {
    if r != 1 || fds.len() != 1 {
        cursor::diverge(
            ld,
            &format!(
                "a {call:?} whose outcome was not logged returned {r} (errno {err}, fds {:?}) where the record saw one fd ready",
                fds.iter().map(|f| f.fd).collect::<Vec<_>>()
            ),
        );
    }
    cursor::advance(ld, &Record::Ready { call, fds });
}

/// The ready set has been reported to the program.
fn done(ld: &mut Ld, call: WaitCall, fds: Vec<ReadyFd>) {
    cursor::advance(ld, &Record::Ready { call, fds });
}

/// POLLNVAL: the fd is not open.
const NVAL: u32 = 0x20;

/// Waits until `fd` really reports every event of `ev` that can be waited for; bytes the LD
/// holds for it (`held.rs`) make it readable, and a UDP socket is. Waits on the fd for what is missing, never
/// sleeping in between.
fn wait_until_ready(ld: &mut Ld, fd: c_int, ev: Events) {
    let waitable =
        Events::IN | Events::PRI | Events::OUT | Events::RDHUP | Events::HUP | Events::ERR;
    let mut want = ev.0 & waitable & possible(fd);
    if want == 0 || ev.0 & NVAL != 0 {
        return; // nothing to wait for, or POLLNVAL (a closed fd): report as recorded
    }
    // A UDP socket's datagrams come from the history (`datagram.rs`), not the kernel.
    if want & Events::IN != 0 && (held::holds(ld, fd) || crate::fds::is_datagram(fd)) {
        want &= !Events::IN;
        if want == 0 {
            return;
        }
    }
    let mut missing = want;
    loop {
        // Hang-ups and errors are reported whether asked for or not.
        let asked = (missing & !(Events::HUP | Events::ERR)) as i16;
        // Baton down while it waits: another thread's clock read (which takes the baton) may
        // be what makes the fd ready (node's main thread, while a helper thread's epoll waits).
        let got = crate::baton::put_down_for(|| sys::poll_one(fd, asked, -1));
        if got < 0 && sys::errno() != libc::EINTR {
            return;
        }
        if got <= 0 {
            continue;
        }
        // A hang-up or error ends every wait: select reports such an fd readable and
        // writable (the call would not block), while poll on a pipe whose writers are all
        // gone reports POLLHUP without POLLIN. A closed fd has nothing to wait for.
        if got as u32 & (Events::HUP | Events::ERR | NVAL) != 0 {
            return;
        }
        // What came may go again while the rest is awaited: check the whole set at once.
        let now = sys::poll_one(fd, (want & !(Events::HUP | Events::ERR)) as i16, 0).max(0) as u32;
        if now & want == want || now & (Events::HUP | Events::ERR) != 0 {
            return;
        }
        missing = want & !now;
    }
}

/// The events `fd` can come to report, by its access mode: a write-only fd (a pipe's write
/// end) never becomes readable, a read-only one never writable. What the record saw on an fd
/// ddbx does not follow may be more: a script's standard output in a file reports `in|out`,
/// and in a replay whose output is a pipe, waiting for `in` on it would wait for ever (xargs
/// polls its standard streams as it starts).
fn possible(fd: c_int) -> u32 {
    let all = u32::MAX;
    match sys::fcntl(fd, libc::F_GETFL, 0) {
        fl if fl < 0 => all,
        fl => match fl & libc::O_ACCMODE {
            libc::O_WRONLY => all & !(Events::IN | Events::PRI | Events::RDHUP),
            libc::O_RDONLY => all & !Events::OUT,
            _ => all,
        },
    }
}

/// A poll/epoll timeout in milliseconds as microseconds (`None`: no timeout, wait forever).
pub fn millis(ms: c_int) -> Option<u64> {
    (ms >= 0).then(|| ms as u64 * 1000)
}

/// A timespec timeout as microseconds (`None`: null, wait forever).
///
/// # Safety
/// `t` must be null or valid.
pub unsafe fn timespec(t: *const libc::timespec) -> Option<u64> {
    // SAFETY: as the caller promises.
    let t = unsafe { t.as_ref() }?;
    Some(t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_nsec.max(0) as u64 / 1000)
}

/// A timeval timeout as microseconds (`None`: null, wait forever).
///
/// # Safety
/// `t` must be null or valid.
pub unsafe fn timeval(t: *const libc::timeval) -> Option<u64> {
    // SAFETY: as the caller promises.
    let t = unsafe { t.as_ref() }?;
    Some(t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64)
}
