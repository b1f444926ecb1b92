//! Replay of a process with threads: each thread waits for the events before its own.
//!
//! The record logs a process's events in the order its threads made them, one thread at a
//! time (`baton.rs`), and a `~t` line before each event of another thread than the last
//! one's. Replay follows the same sequence: a thread about to make an event waits, with the
//! baton put down, until every event before its next one has happened; the threads then make
//! the process's events in the recorded order, and each gets the outcomes its own events had.

use crate::ld::Ld;
use crate::ld::threads::thread_of;
use crate::sys;
use ddbx_wire::history::Record;
use ddbx_wire::proto::Mode;
use libc::c_int;

/// Replay, in a process with threads: waits until the next event of the history is the
/// calling thread's. Past the history's end there is nothing to wait for, unless it ended with
/// the process's exit: then the exit is under way, and the thread waits for it.
pub fn await_turn(ld: &mut Ld) {
    if ld.mode != Mode::Replay || !ld.threads_ordered() {
        return;
    }
    let me = crate::locks::me();
    loop {
        let seen = crate::baton::events_seen();
        let Some(replay) = ld.replay.as_ref() else {
            return;
        };
        let next = ld.events() as usize;
        if next >= replay.records.len() {
            if matches!(ld.last_record(), Some(Record::Exit { .. })) {
                // Another thread has made the process's exit, which is under way: this one
                // was in a wait the record never saw return (memcached's workers in
                // `epoll_wait` as its main thread exits). It waits for the end.
                crate::baton::await_event(seen);
                continue;
            }
            return;
        }
        if thread_of(&replay.threads, next) == me && !made_before(ld, next as u64) {
            return;
        }
        crate::baton::await_event(seen);
    }
}

/// In a process with threads: `got`, an fd the program just made, moved onto `recorded`, the
/// number the record's call gave it, when that number is free (with its close-on-exec flag);
/// otherwise `got`. The kernel gives the lowest free number, which depends on what the other
/// threads opened and closed meanwhile: in the record a blocking accept or a thread's `open`
/// may have found a lower fd still open that replay's order has closed already.
pub fn onto_number(got: c_int, recorded: c_int) -> c_int {
    if got == recorded || recorded < 0 || !number_frees(recorded) {
        return got;
    }
    let cloexec = sys::fcntl(got, libc::F_GETFD, 0);
    if cloexec < 0 {
        return got;
    }
    let cmd = if cloexec & libc::FD_CLOEXEC != 0 {
        libc::F_DUPFD_CLOEXEC
    } else {
        libc::F_DUPFD
    };
    let moved = sys::fcntl(got, cmd, recorded as libc::c_long);
    if moved != recorded {
        if moved >= 0 {
            sys::close(moved);
        }
        return got;
    }
    sys::close(got);
    moved
}

/// How long [`onto_number`] waits for the recorded number to be free (ms).
const NUMBER_PATIENCE_MS: u32 = 20;

/// Whether `fd` is free, or frees within [`NUMBER_PATIENCE_MS`] (the baton put down
/// meanwhile). The LD's own files (a pipe's turn page, a mapped table) open at the lowest free
/// number before they are moved high: another thread's, opened at that instant, holds the
/// number the program's fd should get for a moment, and the fd kept another number from then
/// on (memcached's listening socket, made as its workers started: `an epoll_wait on epoll fd 3
/// in which fd 23 is not registered`, 3 test runs of 6 under load).
fn number_frees(fd: c_int) -> bool {
    for _ in 0..NUMBER_PATIENCE_MS {
        if sys::fcntl(fd, libc::F_GETFD, 0) < 0 {
            return true;
        }
        crate::baton::put_down_for(|| sys::sleep_us(1000));
    }
    sys::fcntl(fd, libc::F_GETFD, 0) < 0
}

/// [`onto_number`] for the two ends a pipe or socketpair just put into `ends`, when the
/// replay's next record (the `Pipe` or `Pair` being replayed) names other numbers.
pub fn ends_onto_recorded(ld: &Ld, ends: &mut [c_int; 2]) {
    if !ld.threads_ordered() {
        return;
    }
    let want = match ld.next_record() {
        Some(Record::Pipe { read_fd, write_fd }) => [*read_fd, *write_fd],
        Some(Record::Pair { fd, peer_fd }) => [*fd, *peer_fd],
        _ => return,
    };
    // Twice: one end may sit on the number the other one wants.
    for _ in 0..2 {
        for i in 0..2 {
            ends[i] = onto_number(ends[i], want[i]);
        }
    }
}

/// How long an event waits for an fd the record made before it, whose thread does not come to
/// make it (the program took another path): then it goes on without it.
const MADE_PATIENCE_NS: u64 = 2_000_000_000;

/// Since when an event has waited for fds made before it (0: it does not wait), see
/// [`made_before`].
static MADE_WAIT_SINCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether an fd the record made before event index `next` (after the events before it) is
/// still to be made; one whose thread has not come for [`MADE_PATIENCE_NS`] is given up.
fn made_before(ld: &mut Ld, next: u64) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(replay) = ld.replay.as_mut() else {
        return false;
    };
    if !replay.made.pending(next) {
        MADE_WAIT_SINCE.store(0, Relaxed);
        return false;
    }
    let now = sys::monotonic_ns();
    let since = match MADE_WAIT_SINCE.load(Relaxed) {
        0 => {
            MADE_WAIT_SINCE.store(now, Relaxed);
            now
        }
        since => since,
    };
    if now.saturating_sub(since) < MADE_PATIENCE_NS {
        return true;
    }
    replay.made.give_up(next);
    MADE_WAIT_SINCE.store(0, Relaxed);
    false
}

/// Replay: thread `t` makes an fd with `call` (socket, open, epoll_create, dup) at the place
/// the record made its next one (after as many events), and the fd is moved onto the
/// recorded number (`hooks::made_fd`).
pub fn make_fd(ld: &mut Ld, t: u32, call: impl FnOnce() -> c_int) -> c_int {
    let Some((k, gap, recorded)) = ld.replay.as_mut().and_then(|r| r.made.next_of(t, false)) else {
        return call();
    };
    at_place(ld, k, gap, || {
        let fd = call();
        if fd >= 0 {
            onto_number(fd, recorded)
        } else {
            fd
        }
    })
}

/// Replay: thread `t` closes an fd with `call` (a close that is not an event) at the place the
/// record closed its next one, so that the number is free for whoever the record gave it to
/// next, and not before (`hooks::socket::closing`).
pub fn free_fd(ld: &mut Ld, t: u32, call: impl FnOnce() -> c_int) -> c_int {
    let Some((k, gap, _)) = ld.replay.as_mut().and_then(|r| r.made.next_of(t, true)) else {
        return call();
    };
    at_place(ld, k, gap, call)
}

/// Waits until entry `k` of the record's fd changes is at its place (after `gap` events and
/// after the changes before it; at most [`MADE_PATIENCE_NS`]), makes it with `call`, and marks
/// it made. errno is `call`'s.
fn at_place(ld: &mut Ld, k: usize, gap: u64, call: impl FnOnce() -> c_int) -> c_int {
    let since = sys::monotonic_ns();
    loop {
        let seen = crate::baton::events_seen();
        let settled = ld.replay.as_ref().map_or(k, |r| r.made.settled());
        if (ld.events() >= gap && settled >= k)
            || sys::monotonic_ns().saturating_sub(since) >= MADE_PATIENCE_NS
        {
            break;
        }
        crate::baton::await_event(seen);
    }
    let r = call();
    let err = sys::errno();
    if let Some(replay) = ld.replay.as_mut() {
        replay.made.done(k);
    }
    crate::baton::event_happened();
    sys::set_errno(err);
    r
}

/// Whether the calling thread runs the handlers of recorded deliveries: the main thread of a
/// process with threads (the record passed every signal sent to the process on to it,
/// `crate::hooks::signal`), the only one otherwise. Another thread's event is no place for
/// them: Node's SIGTERM handler, run at the gate of a helper thread's `epoll_wait`, made its
/// lock-pipe read there, an event the record never had.
pub fn on_handlers_thread() -> bool {
    if !crate::locks::threaded() {
        return true;
    }
    match crate::locks::known_me() {
        0 => sys::gettid() == sys::getpid(), // not known yet: asked of the kernel
        me => me == 1,
    }
}

/// Where the main thread's entries into hooks before the record's event `gap` are counted
/// from: `gap` in a process without threads; in one with threads, the count of events just
/// after the main thread's last event before `gap` (its entries are its own, the other
/// threads' events come between them in no fixed order).
pub fn main_mark(ld: &Ld, gap: u64) -> u64 {
    let Some(replay) = ld.replay.as_ref().filter(|_| crate::locks::threaded()) else {
        return gap;
    };
    let runs = &replay.threads;
    let mut end = gap as usize;
    // The runs that start before `gap`, latest first: the first of the main thread's ends it.
    for &(start, thread) in runs[..runs.partition_point(|(start, _)| *start < end)]
        .iter()
        .rev()
    {
        if thread == 1 {
            return end as u64;
        }
        end = start;
    }
    end as u64 // before the first run, every event is the main thread's
}
